import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv2d Divide LeakyReLU (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x):
        x = self.conv(x)
        x = x / 2.0
        return F.leaky_relu(x, negative_slope=0.01)


def get_inputs():
    return [torch.randn(2, 3, 10, 10)]


def get_init_inputs():
    return []
