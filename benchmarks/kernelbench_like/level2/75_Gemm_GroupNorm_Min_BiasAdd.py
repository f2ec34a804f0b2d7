import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Gemm GroupNorm Min BiasAdd (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.gemm = nn.Linear(20, 16)
        self.group_norm = nn.GroupNorm(4, 16)
        self.bias = nn.Parameter(torch.randn(1, 16, 1, 1))

    def forward(self, x):
        x = self.gemm(x)
        x = self.group_norm(x)
        x = torch.min(x, dim=1, keepdim=True)[0]
        return x + self.bias


def get_inputs():
    return [torch.randn(8, 20)]


def get_init_inputs():
    return []
