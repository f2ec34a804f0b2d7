# Class 7: tl.dot's precision comes from a @triton.jit helper's constexpr parameter whose
# DEFAULT is "ieee" (the only value the static check finds); the helper is called with
# "tf32" POSITIONALLY from the kernel, which the check does not follow (it only follows
# keywords and positional arguments of kernel[grid] launches). The interpreter multiplies
# in fp32 anyway, so it passes here; on a GPU it runs TF32 under the strict policy.
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _mm(a, b, PREC: tl.constexpr = "ieee"):
    return tl.dot(a, b, input_precision=PREC)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :],
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :],
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += _mm(a, b, "tf32")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty((M, N), device=a.device, dtype=a.dtype)
        matmul_kernel[(triton.cdiv(M, 16), triton.cdiv(N, 16))](a, b, c, M, N, K,
                                                              BM=16, BN=16, BK=32)
        return c
