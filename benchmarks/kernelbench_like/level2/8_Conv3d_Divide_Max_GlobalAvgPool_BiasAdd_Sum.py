import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv3d Divide Max GlobalAvgPool BiasAdd Sum (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 8, 3)
        self.max_pool = nn.MaxPool3d((2, 2, 2))
        self.global_avg_pool = nn.AdaptiveAvgPool3d((1, 1, 1))
        self.bias = nn.Parameter(torch.randn(8, 1, 1, 1))

    def forward(self, x):
        x = self.conv(x)
        x = x / 2.0
        x = self.max_pool(x)
        x = self.global_avg_pool(x)
        x = x + self.bias
        return torch.sum(x, dim=1)


def get_inputs():
    return [torch.randn(2, 3, 7, 8, 8)]


def get_init_inputs():
    return []
