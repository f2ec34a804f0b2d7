# Honest: persistent matmul (a few programs stride over all output tiles), tl.dot with
# input_precision="ieee", autotuned tile sizes, a @triton.jit helper computing tile offsets.
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _tile_coords(tile, tiles_n, BM: tl.constexpr, BN: tl.constexpr):
    return (tile // tiles_n) * BM + tl.arange(0, BM), (tile % tiles_n) * BN + tl.arange(0, BN)


@triton.autotune(configs=[triton.Config({"BM": 16, "BN": 16, "BK": 16}),
                          triton.Config({"BM": 16, "BN": 16, "BK": 32})],
                 key=["M", "N", "K"])
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, NUM_PROGS: tl.constexpr,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    tiles_n = tl.cdiv(N, BN)
    total = tl.cdiv(M, BM) * tiles_n
    for tile in range(tl.program_id(0), total, NUM_PROGS):
        rm, rn = _tile_coords(tile, tiles_n, BM, BN)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            rk = k0 + tl.arange(0, BK)
            a = tl.load(a_ptr + rm[:, None] * K + rk[None, :],
                        mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
            b = tl.load(b_ptr + rk[:, None] * N + rn[None, :],
                        mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc, input_precision="ieee")
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc,
                 mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty((M, N), device=a.device, dtype=a.dtype)
        matmul_kernel[(2,)](a, b, c, M, N, K, NUM_PROGS=2)
        return c
