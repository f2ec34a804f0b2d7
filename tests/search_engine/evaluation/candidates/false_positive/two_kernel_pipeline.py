"""Clean: two kernels with a scratch buffer: row statistics first, then the normalisation."""
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def stats_kernel(x_ptr, stats_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=0)
    s = tl.sum(tl.where(mask, tl.exp(x - m), 0.0), axis=0)
    tl.store(stats_ptr + row * 2, m)
    tl.store(stats_ptr + row * 2 + 1, s)


@triton.jit
def normalise_kernel(x_ptr, stats_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    m = tl.load(stats_ptr + row * 2)
    s = tl.load(stats_ptr + row * 2 + 1)
    tl.store(y_ptr + row * n_cols + cols, tl.exp(x - m) / s, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        block = triton.next_power_of_2(n_cols)
        scratch = torch.empty((n_rows, 2), device=x.device, dtype=torch.float32)
        y = torch.empty_like(x)
        stats_kernel[(n_rows,)](x, scratch, n_cols, BLOCK=block)
        normalise_kernel[(n_rows,)](x, scratch, y, n_cols, BLOCK=block)
        return y
