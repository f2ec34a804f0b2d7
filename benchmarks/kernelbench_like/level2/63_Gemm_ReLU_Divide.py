import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Gemm ReLU Divide (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(20, 16)

    def forward(self, x):
        x = self.linear(x)
        x = torch.relu(x)
        return x / 2.0


def get_inputs():
    return [torch.randn(8, 20)]


def get_init_inputs():
    return []
