import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """HingeLoss (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))


def get_inputs():
    return [torch.randn(16), torch.randint(0, 2, (16,)).float() * 2 - 1]


def get_init_inputs():
    return []
