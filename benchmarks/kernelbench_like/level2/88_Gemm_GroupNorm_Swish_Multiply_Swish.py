import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Gemm GroupNorm Swish Multiply Swish (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.gemm = nn.Linear(20, 16)
        self.group_norm = nn.GroupNorm(4, 16)
        self.multiply_weight = nn.Parameter(torch.randn(16))

    def forward(self, x):
        x = self.gemm(x)
        x = self.group_norm(x)
        x = x * torch.sigmoid(x)
        x = x * self.multiply_weight
        return x * torch.sigmoid(x)


def get_inputs():
    return [torch.randn(8, 20)]


def get_init_inputs():
    return []
