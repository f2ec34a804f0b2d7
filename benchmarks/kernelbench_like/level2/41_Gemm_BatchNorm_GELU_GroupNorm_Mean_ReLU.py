import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Gemm BatchNorm GELU GroupNorm Mean ReLU (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.gemm = nn.Linear(20, 16)
        self.batch_norm = nn.BatchNorm1d(16)
        self.group_norm = nn.GroupNorm(4, 16)

    def forward(self, x):
        x = self.gemm(x)
        x = self.batch_norm(x)
        x = F.gelu(x)
        x = self.group_norm(x)
        x = torch.mean(x, dim=1, keepdim=True)
        return torch.relu(x)


def get_inputs():
    return [torch.randn(8, 20)]


def get_init_inputs():
    return []
