"""Clean: try/except ImportError version shims for allowed modules (libdevice moved between
Triton releases). Must pass: the shim imports only Triton."""
import torch
import triton
import triton.language as tl
from torch import nn

try:
    from triton.language.extra import libdevice
except ImportError:  # older Triton
    from triton.language import math as libdevice

try:
    from triton.language.extra.cuda import libdevice as cuda_libdevice  # noqa: F401
except (ImportError, ModuleNotFoundError):
    cuda_libdevice = None


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = libdevice.exp(x)
    tl.store(y_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return y
