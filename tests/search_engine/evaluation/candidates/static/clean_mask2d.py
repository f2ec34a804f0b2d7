"""Clean: a 2-D tiled kernel whose mask combines two dims with `&`; an elementwise
scale-and-shift with a broadcast bias read through `expand(...).stride()`. Must pass."""
import torch
import triton
import triton.language as tl
from torch import nn

BLOCK_M = 8
BLOCK_N = 32


@triton.jit
def scale_shift_kernel(x_ptr, b_ptr, y_ptr, M, N, stride_xm, stride_bm, stride_bn, scale,
                       BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=mask, other=0.0)
    b = tl.load(b_ptr + rows[:, None] * stride_bm + cols[None, :] * stride_bn, mask=mask,
                other=0.0)
    y = x * scale + b
    tl.store(y_ptr + rows[:, None] * N + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, n: int = 256):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(n))
        self.scale = 2.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        M, N = x.shape
        y = torch.empty((M, N), device=x.device, dtype=x.dtype)
        sb = self.bias.expand(M, N).stride()
        grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
        scale_shift_kernel[grid](x, self.bias, y, M, N, x.stride(0), sb[0], sb[1], self.scale,
                                 BM=BLOCK_M, BN=BLOCK_N)
        return y
