import numpy as np
import torch
import triton
import triton.language as tl
from torch import nn


def host_softmax_row(v):
    """Plain Python, called inside the kernel: the interpreter runs it on the host."""
    data = np.asarray(v.handle.data, dtype=np.float64)
    e = np.exp(data - data.max())
    v.handle.data[...] = (e / e.sum()).astype(v.handle.data.dtype)
    return v


@triton.jit
def row_kernel(x_ptr, y_ptr, n_cols, FN: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + offs)
    tl.store(y_ptr + row * n_cols + offs, FN(x))


class ModelNew(nn.Module):
    """Class 6: a Python function passed as a constexpr and called inside the kernel."""

    def forward(self, x):
        y = torch.empty_like(x)
        row_kernel[(x.shape[0],)](x, y, x.shape[1], FN=host_softmax_row, BLOCK=x.shape[1])
        return y
