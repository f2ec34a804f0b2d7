import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv3d LeakyReLU Sum Clamp GELU (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 8, 3)
        self.sum_tensor = nn.Parameter(torch.randn(8, 1, 1, 1))

    def forward(self, x):
        x = self.conv(x)
        x = F.leaky_relu(x, negative_slope=0.2)
        x = x + self.sum_tensor
        x = torch.clamp(x, min=-1.0, max=1.0)
        return F.gelu(x)


def get_inputs():
    return [torch.randn(2, 3, 6, 7, 7)]


def get_init_inputs():
    return []
