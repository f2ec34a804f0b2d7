import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ELU (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.alpha = 1.0

    def forward(self, x):
        return F.elu(x, alpha=self.alpha)


def get_inputs():
    return [torch.randn(8, 33)]


def get_init_inputs():
    return []
