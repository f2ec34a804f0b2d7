"""Clean: @triton.autotune over several triton.Config (rows per program, warps) on top of
@triton.jit, with a grid lambda. Must pass; runs under the interpreter after
interpreter_compat.install()."""
import torch
import triton
import triton.language as tl
from torch import nn


@triton.autotune(
    configs=[
        triton.Config({"ROWS": 1}, num_warps=2),
        triton.Config({"ROWS": 2}, num_warps=4),
        triton.Config({"ROWS": 4}, num_warps=8),
    ],
    key=["n_rows", "n_cols"],
)
@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_rows, n_cols, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=1)[:, None]
    num = tl.where(mask, tl.exp(x), 0.0)
    tl.store(y_ptr + offs, num / tl.sum(num, axis=1)[:, None], mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n_rows, n_cols = x.shape
        grid = lambda meta: (triton.cdiv(n_rows, meta["ROWS"]),)  # noqa: E731
        softmax_kernel[grid](x, y, n_rows, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return y
