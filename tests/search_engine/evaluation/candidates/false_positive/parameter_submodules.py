"""Clean: custom Parameter submodules and a buffer, read by the kernel (a temperature of 1)."""
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def softmax_kernel(x_ptr, t_ptr, s_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    inv_t = 1.0 / tl.load(t_ptr)
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf")) * inv_t
    x = x * tl.load(s_ptr)
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=mask)


class Temperature(nn.Module):
    def __init__(self):
        super().__init__()
        self.value = nn.Parameter(torch.ones(1))

    def pointer(self):
        return self.value.detach()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.temperature = Temperature()
        self.register_buffer("scale", torch.ones(1))

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        t = self.temperature.pointer().to(x.device)
        softmax_kernel[(x.shape[0],)](x, t, self.scale.to(x.device), y, x.shape[1],
                                      BLOCK=triton.next_power_of_2(x.shape[1]))
        return y
