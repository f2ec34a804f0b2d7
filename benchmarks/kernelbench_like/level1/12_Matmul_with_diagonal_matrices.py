import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Matmul with diagonal matrices (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.diag(A) @ B


def get_inputs():
    return [torch.randn(24), torch.randn(24, 20)]


def get_init_inputs():
    return []
