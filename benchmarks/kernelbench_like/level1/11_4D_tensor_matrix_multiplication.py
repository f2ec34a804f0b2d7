import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """4D tensor matrix multiplication (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.einsum('bijl,lk->bijk', A, B)


def get_inputs():
    return [torch.randn(2, 3, 8, 16), torch.randn(16, 12)]


def get_init_inputs():
    return []
