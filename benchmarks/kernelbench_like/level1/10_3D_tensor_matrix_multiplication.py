import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """3D tensor matrix multiplication (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(4, 20, 24), torch.randn(24, 16)]


def get_init_inputs():
    return []
