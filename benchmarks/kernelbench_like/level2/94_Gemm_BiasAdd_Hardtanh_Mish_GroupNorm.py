import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Gemm BiasAdd Hardtanh Mish GroupNorm (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.gemm = nn.Linear(20, 16)
        self.bias = nn.Parameter(torch.randn(16))
        self.hardtanh = nn.Hardtanh()
        self.mish = nn.Mish()
        self.groupnorm = nn.GroupNorm(num_groups=4, num_channels=16)

    def forward(self, x):
        x = self.gemm(x)
        x = x + self.bias
        x = self.hardtanh(x)
        x = self.mish(x)
        return self.groupnorm(x)


def get_inputs():
    return [torch.randn(8, 20)]


def get_init_inputs():
    return []
