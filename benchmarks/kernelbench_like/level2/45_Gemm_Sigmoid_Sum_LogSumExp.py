import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Gemm Sigmoid Sum LogSumExp (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.linear1 = nn.Linear(20, 16)
        self.linear2 = nn.Linear(16, 12)

    def forward(self, x):
        x = self.linear1(x)
        x = torch.sigmoid(x)
        x = self.linear2(x)
        return torch.logsumexp(x, dim=1)


def get_inputs():
    return [torch.randn(8, 20)]


def get_init_inputs():
    return []
