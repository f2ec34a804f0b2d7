import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """cumsum (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.dim = 1

    def forward(self, x):
        return torch.cumsum(x, dim=self.dim)


def get_inputs():
    return [torch.randn(8, 100)]


def get_init_inputs():
    return []
