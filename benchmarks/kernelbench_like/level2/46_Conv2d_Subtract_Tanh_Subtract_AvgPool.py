import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv2d Subtract Tanh Subtract AvgPool (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.avgpool = nn.AvgPool2d(2)

    def forward(self, x):
        x = self.conv(x)
        x = x - 0.5
        x = torch.tanh(x)
        x = x - 0.2
        return self.avgpool(x)


def get_inputs():
    return [torch.randn(2, 3, 10, 10)]


def get_init_inputs():
    return []
