import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Matmul with irregular shapes (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(37, 29), torch.randn(29, 41)]


def get_init_inputs():
    return []
