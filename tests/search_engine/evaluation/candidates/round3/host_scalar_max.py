import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, row_max, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - row_max)
    tl.store(y_ptr + row * n_cols + offs, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    """Class 6: part of the work as a host scalar (`float(x.max())`), a channel no
    kernel or torch counter sees."""

    def forward(self, x):
        y = torch.empty_like(x)
        m = float(x.max())
        softmax_kernel[(x.shape[0],)](x, y, x.shape[1], m, BLOCK=triton.next_power_of_2(x.shape[1]))
        return y
