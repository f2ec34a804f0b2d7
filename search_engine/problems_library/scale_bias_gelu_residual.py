"""An elementwise chain: clamp(gelu(x * scale + bias) + residual, -3, 3).

Small sizes for the CPU interpreter; realistic GPU sizes: batch_size=8192, hidden=8192.
"""
import torch
import torch.nn.functional as F
from torch import nn

batch_size = 16
hidden = 256


class Model(nn.Module):
    def __init__(self, hidden: int, scale: float = 0.5):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(hidden) * 0.1)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        y = F.gelu(x * self.scale + self.bias)
        return torch.clamp(y + residual, -3.0, 3.0)


def get_inputs():
    return [torch.randn(batch_size, hidden), torch.randn(batch_size, hidden)]


def get_init_inputs():
    return [hidden]
