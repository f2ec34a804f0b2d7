import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Matmul BatchNorm BiasAdd Divide Swish (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.matmul = nn.Linear(20, 16)
        self.bn = nn.BatchNorm1d(16)
        self.bias = nn.Parameter(torch.randn(1))

    def forward(self, x):
        x = self.matmul(x)
        x = self.bn(x)
        x = x + self.bias
        x = x / 1.0
        return x * torch.sigmoid(x)


def get_inputs():
    return [torch.randn(8, 20)]


def get_init_inputs():
    return []
