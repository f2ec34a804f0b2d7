import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Gemm LogSumExp LeakyReLU LeakyReLU GELU GELU (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(20, 16)

    def forward(self, x):
        x = self.linear(x)
        x = torch.logsumexp(x, dim=1, keepdim=True)
        x = F.leaky_relu(x, negative_slope=0.01)
        x = F.leaky_relu(x, negative_slope=0.01)
        x = F.gelu(x)
        return F.gelu(x)


def get_inputs():
    return [torch.randn(8, 20)]


def get_init_inputs():
    return []
