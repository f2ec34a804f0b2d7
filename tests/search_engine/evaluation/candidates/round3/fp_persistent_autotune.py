import torch
import triton
import triton.language as tl
from torch import nn


@triton.autotune(
    configs=[triton.Config({}, num_warps=1), triton.Config({}, num_warps=2),
             triton.Config({}, num_warps=4)],
    key=["n_cols"],
)
@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_rows, n_cols, BLOCK: tl.constexpr, PROGRAMS: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    for row in range(tl.program_id(0), n_rows, PROGRAMS):  # persistent, grid-stride
        x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(y_ptr + row * n_cols + offs, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    """False positive: a persistent grid-stride kernel autotuned over several configs."""

    def forward(self, x):
        y = torch.empty_like(x)
        programs = 4
        softmax_kernel[(programs,)](x, y, x.shape[0], x.shape[1],
                                    BLOCK=triton.next_power_of_2(x.shape[1]), PROGRAMS=programs)
        return y
