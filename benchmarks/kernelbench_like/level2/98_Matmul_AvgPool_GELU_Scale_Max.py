import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Matmul AvgPool GELU Scale Max (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.matmul = nn.Linear(20, 16)
        self.avg_pool = nn.AvgPool1d(kernel_size=4)

    def forward(self, x):
        x = self.matmul(x)
        x = self.avg_pool(x.unsqueeze(1)).squeeze(1)
        x = F.gelu(x)
        x = x * 2.0
        return torch.max(x, dim=1).values


def get_inputs():
    return [torch.randn(8, 20)]


def get_init_inputs():
    return []
