import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Matmul for lower triangular matrices (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.tril(torch.matmul(A, B))


def get_inputs():
    return [torch.tril(torch.randn(32, 32)), torch.tril(torch.randn(32, 32))]


def get_init_inputs():
    return []
