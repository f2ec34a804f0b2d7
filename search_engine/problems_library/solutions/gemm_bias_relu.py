import torch
import triton
import triton.language as tl
from torch import nn

# "ieee" is exact fp32 (passes the strict policy); "tf32" is faster and needs --precision tf32.
DOT_PRECISION = "ieee"


@triton.jit
def gemm_bias_relu_kernel(
    a_ptr, w_ptr, bias_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_wn, stride_wk, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    PRECISION: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k + rk)[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * stride_wn + (k + rk)[:, None] * stride_wk,
                    mask=(rn[None, :] < N) & ((k + rk)[:, None] < K), other=0.0)
        acc += tl.dot(a, w, input_precision=PRECISION)
    bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0)
    acc = tl.maximum(acc + bias[None, :], 0.0)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        self.bias = nn.Parameter(torch.empty(out_features))

    def load_state_dict(self, state_dict, strict=True, assign=False):
        renamed = {k.removeprefix("linear."): v for k, v in state_dict.items()}
        return super().load_state_dict(renamed, strict=strict, assign=assign)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, K = x.shape
        N = self.weight.shape[0]
        c = torch.empty((M, N), device=x.device, dtype=torch.float32)
        bm, bn, bk = (128, 128, 32) if M * N >= 1 << 20 else (32, 32, 32)
        grid = (triton.cdiv(M, bm), triton.cdiv(N, bn))
        gemm_bias_relu_kernel[grid](
            x, self.weight, self.bias, c, M, N, K,
            x.stride(0), x.stride(1), self.weight.stride(0), self.weight.stride(1),
            c.stride(0), c.stride(1),
            BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, PRECISION=DOT_PRECISION,
            num_warps=8 if bm == 128 else 4, num_stages=3,
        )
        return c
