import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Matrix vector multiplication (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(40, 64), torch.randn(64, 1)]


def get_init_inputs():
    return []
