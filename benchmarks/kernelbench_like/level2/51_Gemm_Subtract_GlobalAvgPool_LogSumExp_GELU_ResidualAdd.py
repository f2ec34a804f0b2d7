import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Gemm Subtract GlobalAvgPool LogSumExp GELU ResidualAdd (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.gemm = nn.Linear(20, 16)
        self.subtract = nn.Parameter(torch.randn(16))

    def forward(self, x):
        original_x = x.clone().detach()
        x = self.gemm(x)
        x = x - self.subtract
        x = torch.mean(x, dim=1, keepdim=True)
        x = torch.logsumexp(x, dim=1, keepdim=True)
        x = F.gelu(x)
        return x + original_x


def get_inputs():
    return [torch.randn(8, 20)]


def get_init_inputs():
    return []
