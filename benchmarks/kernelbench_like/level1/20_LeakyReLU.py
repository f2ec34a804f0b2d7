import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """LeakyReLU (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.negative_slope = 0.01

    def forward(self, x):
        return F.leaky_relu(x, negative_slope=self.negative_slope)


def get_inputs():
    return [torch.randn(8, 33)]


def get_init_inputs():
    return []
