import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Max Pooling 2D (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.maxpool = nn.MaxPool2d(kernel_size=2, stride=2, padding=1, dilation=3)

    def forward(self, x):
        return self.maxpool(x)


def get_inputs():
    return [torch.randn(2, 4, 17, 17)]


def get_init_inputs():
    return []
