"""RMS norm over dim 1 of (B, C, H, W): each program owns a strip of H*W positions of one
batch item and loops over the C channels twice (sum of squares, then scale)."""
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def rmsnorm_channels_kernel(x_ptr, y_ptr, C, HW, eps, BLOCK: tl.constexpr):
    b = tl.program_id(1)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < HW
    base = b.to(tl.int64) * C * HW
    acc = tl.zeros([BLOCK], tl.float32)
    for c in range(0, C):
        x = tl.load(x_ptr + base + c * HW + offs, mask=mask, other=0.0)
        acc += x * x
    inv = 1.0 / tl.sqrt(acc / C + eps)
    for c in range(0, C):
        x = tl.load(x_ptr + base + c * HW + offs, mask=mask, other=0.0)
        tl.store(y_ptr + base + c * HW + offs, x * inv, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        B, C, H, W = x.shape
        grid = (triton.cdiv(H * W, 1024), B)
        rmsnorm_channels_kernel[grid](x, y, C, H * W, self.eps, BLOCK=1024, num_warps=4)
        return y
