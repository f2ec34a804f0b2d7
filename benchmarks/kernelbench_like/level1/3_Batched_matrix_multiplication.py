import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Batched matrix multiplication (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.bmm(A, B)


def get_inputs():
    return [torch.randn(3, 20, 24), torch.randn(3, 24, 18)]


def get_init_inputs():
    return []
