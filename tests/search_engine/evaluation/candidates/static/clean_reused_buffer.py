"""Clean: a workspace allocated in __init__ (a non-persistent buffer) and an output buffer
cached on self and reused while the shape stays the same. Must pass statically."""
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def row_max_kernel(x_ptr, m_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(m_ptr + row, tl.max(x, axis=0))


@triton.jit
def softmax_kernel(x_ptr, m_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.load(m_ptr + row))
    tl.store(y_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, max_rows: int = 4096):
        super().__init__()
        self.register_buffer("row_max", torch.empty(max_rows), persistent=False)
        self._out = None
        self._cache = {}

    def _output_for(self, x: torch.Tensor) -> torch.Tensor:
        if self._out is None or self._out.shape != x.shape or self._out.device != x.device:
            self._out = torch.empty_like(x)
        return self._out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        if self.row_max.numel() < n_rows or self.row_max.device != x.device:
            self.row_max = torch.empty(n_rows, device=x.device, dtype=torch.float32)
        key = tuple(x.shape)
        if key not in self._cache:
            self._cache[key] = triton.next_power_of_2(n_cols)
        block = self._cache[key]
        y = self._output_for(x)
        row_max_kernel[(n_rows,)](x, self.row_max, n_cols, BLOCK=block)
        softmax_kernel[(n_rows,)](x, self.row_max, y, n_cols, BLOCK=block)
        return y
