import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Max Pooling 1D (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.maxpool = nn.MaxPool1d(kernel_size=4, stride=2, padding=2, dilation=3)

    def forward(self, x):
        return self.maxpool(x)


def get_inputs():
    return [torch.randn(2, 4, 33)]


def get_init_inputs():
    return []
