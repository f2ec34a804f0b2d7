import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Argmax over a dimension (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.dim = 1

    def forward(self, x):
        return torch.argmax(x, dim=self.dim)


def get_inputs():
    return [torch.randn(4, 30, 12)]


def get_init_inputs():
    return []
