import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """LayerNorm (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm((4, 10, 10))

    def forward(self, x):
        return self.ln(x)


def get_inputs():
    return [torch.randn(2, 4, 10, 10)]


def get_init_inputs():
    return []
