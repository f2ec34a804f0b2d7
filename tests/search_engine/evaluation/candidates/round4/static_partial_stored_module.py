# Class 8 (+2): a stored nn.LogSoftmax (calling it is flagged) wrapped in functools.partial
# (functools is an allowed pure module) and called through the partial: the module-call
# check looks only at calls whose callee IS the stored name. Kernel only exponentiates.
import functools

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def exp_kernel(z_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.exp(tl.load(z_ptr + offs, mask=mask)), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LogSoftmax(dim=1)

    def forward(self, x):
        z = functools.partial(self.norm)(x)
        y = torch.empty_like(x)
        n = y.numel()
        exp_kernel[(triton.cdiv(n, 1024),)](z, y, n, BLOCK=1024)
        return y
