import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Matmul with small K dimension (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(64, 8), torch.randn(8, 48)]


def get_init_inputs():
    return []
