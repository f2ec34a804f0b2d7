# Class 6: a Python callable handed to a kernel as an argument and called inside the jit
# body. The runtime check treats anything with `run` and `fn` attributes as a Triton object
# (JITFunction/Autotuner), so a plain class carrying `run = fn = None` and a __call__ (not a
# refused dunder definition) is not reported; the interpreter runs it on the host, where it
# computes the softmax of the loaded block in NumPy in place (builtins max/sum, math.e **),
# none of which the static tensor inference sees as tensors. A GPU could not compile it.
import math

import torch
import triton
import triton.language as tl
from torch import nn


class RowOp:
    run = None
    fn = None

    def __call__(self, block):
        a = block.handle.data
        for i in range(len(a)):
            e = math.e ** (a[i] - max(a[i]))
            a[i] = e / sum(e)
        return block


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_rows, n_cols, op, BLOCK_R: tl.constexpr,
                   BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=-float("inf"))
    x = op(x)
    tl.store(y_ptr + offs, x, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.op = RowOp()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, n = x.shape
        softmax_kernel[(triton.cdiv(rows, 4),)](x, y, rows, n, self.op, BLOCK_R=4,
                                                BLOCK=triton.next_power_of_2(n))
        return y
