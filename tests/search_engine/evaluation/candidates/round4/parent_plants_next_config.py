"""A right softmax whose construction plants, in the screening lane's workdir (its cwd), a
link and a FIFO at the names the parent once wrote the NEXT configurations' sources to:
`config_0001.py` -> a host path (the parent would write config 1's source there) and
`config_0002.py` as a FIFO (the parent's open would never return). Static checks off."""
import os

import torch
import triton
import triton.language as tl
from torch import nn

HOST_TARGET = ""  # the test swaps in a host path outside the workdir


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(y_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=mask)


def _plant():
    if not os.path.lexists("config_0001.py"):
        os.symlink(HOST_TARGET, "config_0001.py")
    if not os.path.lexists("config_0002.py"):
        os.mkfifo("config_0002.py")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        _plant()

    def forward(self, x):
        y = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, y, x.shape[1],
                                      BLOCK=triton.next_power_of_2(x.shape[1]))
        return y
