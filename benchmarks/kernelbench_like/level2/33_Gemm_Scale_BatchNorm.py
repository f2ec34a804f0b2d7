import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Gemm Scale BatchNorm (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.gemm = nn.Linear(20, 16)
        self.scale = nn.Parameter(torch.randn(16))
        self.bn = nn.BatchNorm1d(16)

    def forward(self, x):
        x = self.gemm(x)
        x = x * self.scale
        return self.bn(x)


def get_inputs():
    return [torch.randn(8, 20)]


def get_init_inputs():
    return []
