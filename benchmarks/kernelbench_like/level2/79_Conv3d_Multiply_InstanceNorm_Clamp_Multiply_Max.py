import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv3d Multiply InstanceNorm Clamp Multiply Max (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 8, 3)
        self.multiplier = nn.Parameter(torch.randn(8, 1, 1, 1))
        self.instance_norm = nn.InstanceNorm3d(8)

    def forward(self, x):
        x = self.conv(x)
        x = x * self.multiplier
        x = self.instance_norm(x)
        x = torch.clamp(x, -1.0, 1.0)
        x = x * self.multiplier
        return torch.max(x, dim=1)[0]


def get_inputs():
    return [torch.randn(2, 3, 6, 7, 7)]


def get_init_inputs():
    return []
