import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """CrossEntropyLoss (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return F.cross_entropy(predictions, targets)


def get_inputs():
    return [torch.randn(16, 10), torch.randint(0, 10, (16,))]


def get_init_inputs():
    return []
