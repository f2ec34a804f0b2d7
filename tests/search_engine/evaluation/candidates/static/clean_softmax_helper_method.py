"""Clean: a helper method named `softmax` (and a module function named `softmax_rows`)
that launch the candidate's own kernel. Must pass: names defined in the file win."""
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(y_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=mask)


def softmax_rows(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    n_rows, n_cols = x.shape
    softmax_kernel[(n_rows,)](x, y, n_cols, x.stride(0), BLOCK=triton.next_power_of_2(n_cols))
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def softmax(self, x: torch.Tensor, dim: int = 1) -> torch.Tensor:
        assert dim in (1, -1)
        return softmax_rows(x.contiguous())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.softmax(x, dim=1)
