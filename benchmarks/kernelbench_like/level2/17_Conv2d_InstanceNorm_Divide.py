import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv2d InstanceNorm Divide (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.instance_norm = nn.InstanceNorm2d(8)

    def forward(self, x):
        x = self.conv(x)
        x = self.instance_norm(x)
        return x / 2.0


def get_inputs():
    return [torch.randn(2, 3, 10, 10)]


def get_init_inputs():
    return []
