"""RMS norm over the last dimension: x / sqrt(mean(x^2) + eps) * weight.

Small sizes for the CPU interpreter; realistic GPU sizes: batch_size=8192, hidden=4096
(`Problem.from_file(...).with_sizes(batch_size=8192, hidden=4096)` or
`python -m search_engine optimize --problem rmsnorm.py --size batch_size=8192 --size hidden=4096`).
"""
import torch
from torch import nn

batch_size = 16
hidden = 256


class Model(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.rand(hidden) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)
        return x / rms * self.weight


def get_inputs():
    return [torch.randn(batch_size, hidden)]


def get_init_inputs():
    return [hidden]
