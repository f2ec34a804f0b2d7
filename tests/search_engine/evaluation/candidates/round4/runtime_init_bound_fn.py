# Class 8 (+2): a torch function bound to self in __init__ (where any public torch API is
# allowed) and called in forward; torch computes log_softmax, the kernel only applies exp
# (so no torch result equals the answer and the ghost comes out wrong).
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
        self.lsm = torch.log_softmax

    def forward(self, x):
        z = self.lsm(x, 1)
        y = torch.empty_like(x)
        n = y.numel()
        exp_kernel[(triton.cdiv(n, 1024),)](z, y, n, BLOCK=1024)
        return y
