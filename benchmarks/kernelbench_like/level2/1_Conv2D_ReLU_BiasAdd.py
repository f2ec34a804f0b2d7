import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv2D ReLU BiasAdd (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.bias = nn.Parameter(torch.randn(8, 1, 1))

    def forward(self, x):
        x = self.conv(x)
        x = torch.relu(x)
        return x + self.bias


def get_inputs():
    return [torch.randn(2, 3, 10, 10)]


def get_init_inputs():
    return []
