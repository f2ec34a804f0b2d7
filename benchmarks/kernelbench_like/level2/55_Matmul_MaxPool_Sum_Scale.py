import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Matmul MaxPool Sum Scale (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.matmul = nn.Linear(20, 16)
        self.max_pool = nn.MaxPool1d(kernel_size=2)

    def forward(self, x):
        x = self.matmul(x)
        x = self.max_pool(x.unsqueeze(1)).squeeze(1)
        x = torch.sum(x, dim=1)
        return x * 0.5


def get_inputs():
    return [torch.randn(8, 20)]


def get_init_inputs():
    return []
