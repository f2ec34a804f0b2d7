import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Matmul Add Swish Tanh GELU Hardtanh (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.matmul = nn.Linear(20, 16)
        self.add_value = nn.Parameter(torch.randn(16))

    def forward(self, x):
        x = self.matmul(x)
        x = x + self.add_value
        x = torch.sigmoid(x) * x
        x = torch.tanh(x)
        x = F.gelu(x)
        return F.hardtanh(x, min_val=-1, max_val=1)


def get_inputs():
    return [torch.randn(8, 20)]


def get_init_inputs():
    return []
