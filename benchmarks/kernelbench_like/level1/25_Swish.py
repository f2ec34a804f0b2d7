import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Swish (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * torch.sigmoid(x)


def get_inputs():
    return [torch.randn(8, 33)]


def get_init_inputs():
    return []
