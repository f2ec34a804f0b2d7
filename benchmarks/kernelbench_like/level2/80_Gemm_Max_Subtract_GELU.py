import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Gemm Max Subtract GELU (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.gemm = nn.Linear(20, 16)
        self.max_dim = 1

    def forward(self, x):
        x = self.gemm(x)
        x = torch.max(x, dim=self.max_dim, keepdim=True).values
        x = x - x.mean(dim=1, keepdim=True)
        return F.gelu(x)


def get_inputs():
    return [torch.randn(8, 20)]


def get_init_inputs():
    return []
