import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Matrix scalar multiplication (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()

    def forward(self, A, s):
        return A * s


def get_inputs():
    return [torch.randn(30, 20), 3.14]


def get_init_inputs():
    return []
