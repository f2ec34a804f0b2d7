import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Matmul Subtract Multiply ReLU (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.gemm = nn.Linear(20, 16)

    def forward(self, x):
        x = self.gemm(x)
        x = x - 2.0
        x = x * 1.5
        return torch.relu(x)


def get_inputs():
    return [torch.randn(8, 20)]


def get_init_inputs():
    return []
