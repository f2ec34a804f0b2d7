import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Matmul GroupNorm LeakyReLU Sum (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(20, 16)
        self.gn = nn.GroupNorm(num_groups=4, num_channels=16, eps=1e-5)
        self.leaky_relu = nn.LeakyReLU(negative_slope=0.01)

    def forward(self, x):
        x = self.fc(x)
        x = self.gn(x)
        x = self.leaky_relu(x)
        return x + x


def get_inputs():
    return [torch.randn(8, 20)]


def get_init_inputs():
    return []
