import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Matmul Scale ResidualAdd Clamp LogSumExp Mish (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.matmul = nn.Linear(20, 16)

    def forward(self, x):
        x = self.matmul(x)
        x = x * 2.0
        x = x + x
        x = torch.clamp(x, -10.0, 10.0)
        x = torch.logsumexp(x, dim=1, keepdim=True)
        return x * F.mish(x)


def get_inputs():
    return [torch.randn(8, 20)]


def get_init_inputs():
    return []
