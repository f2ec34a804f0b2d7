import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Matmul GELU Softmax (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(20, 16)

    def forward(self, x):
        x = self.linear(x)
        x = F.gelu(x)
        return F.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(8, 20)]


def get_init_inputs():
    return []
