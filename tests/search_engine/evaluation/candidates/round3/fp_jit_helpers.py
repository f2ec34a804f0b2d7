import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _row_max(x):
    return tl.max(x, axis=0)


@triton.jit
def _normalise(e):
    return e / tl.sum(e, axis=0)


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    tl.store(y_ptr + row * n_cols + offs, _normalise(tl.exp(x - _row_max(x))), mask=mask)


class ModelNew(nn.Module):
    """False positive: several @triton.jit helpers called from the kernel."""

    def forward(self, x):
        y = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return y
