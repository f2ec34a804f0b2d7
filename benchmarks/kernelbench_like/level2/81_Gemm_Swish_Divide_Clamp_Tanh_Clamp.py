import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Gemm Swish Divide Clamp Tanh Clamp (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.gemm = nn.Linear(20, 16)

    def forward(self, x):
        x = self.gemm(x)
        x = x * torch.sigmoid(x)
        x = x / 2.0
        x = torch.clamp(x, min=-1.0, max=1.0)
        x = torch.tanh(x)
        return torch.clamp(x, min=-1.0, max=1.0)


def get_inputs():
    return [torch.randn(8, 20)]


def get_init_inputs():
    return []
