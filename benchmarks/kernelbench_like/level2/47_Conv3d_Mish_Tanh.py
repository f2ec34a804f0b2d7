import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv3d Mish Tanh (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 8, 3)

    def forward(self, x):
        x = self.conv(x)
        x = F.mish(x)
        return torch.tanh(x)


def get_inputs():
    return [torch.randn(2, 3, 6, 7, 7)]


def get_init_inputs():
    return []
