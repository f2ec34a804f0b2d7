import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Matmul with transposed B (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B.T)


def get_inputs():
    return [torch.randn(24, 40), torch.randn(20, 40)]


def get_init_inputs():
    return []
