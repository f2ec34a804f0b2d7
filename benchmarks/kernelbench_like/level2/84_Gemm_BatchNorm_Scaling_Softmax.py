import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Gemm BatchNorm Scaling Softmax (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.gemm = nn.Linear(20, 16)
        self.bn = nn.BatchNorm1d(16)
        self.scale = nn.Parameter(torch.ones(1))
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        x = self.gemm(x)
        x = self.bn(x)
        x = self.scale * x
        return self.softmax(x)


def get_inputs():
    return [torch.randn(8, 20)]


def get_init_inputs():
    return []
