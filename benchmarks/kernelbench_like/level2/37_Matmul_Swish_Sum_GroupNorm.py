import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Matmul Swish Sum GroupNorm (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.matmul = nn.Linear(20, 16)
        self.bias = nn.Parameter(torch.randn(16))
        self.group_norm = nn.GroupNorm(4, 16)

    def forward(self, x):
        x = self.matmul(x)
        x = torch.sigmoid(x) * x
        x = x + self.bias
        return self.group_norm(x)


def get_inputs():
    return [torch.randn(8, 20)]


def get_init_inputs():
    return []
