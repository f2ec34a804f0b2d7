import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Gemm Scaling Hardtanh GELU (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.gemm = nn.Linear(20, 16)
        self.hardtanh = nn.Hardtanh(min_val=-2, max_val=2)
        self.gelu = nn.GELU()

    def forward(self, x):
        x = self.gemm(x)
        x = x * 0.5
        x = self.hardtanh(x)
        return self.gelu(x)


def get_inputs():
    return [torch.randn(8, 20)]


def get_init_inputs():
    return []
