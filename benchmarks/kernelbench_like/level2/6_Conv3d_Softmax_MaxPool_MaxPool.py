import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv3d Softmax MaxPool MaxPool (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 8, 3)
        self.pool1 = nn.MaxPool3d(2)
        self.pool2 = nn.MaxPool3d(2)

    def forward(self, x):
        x = self.conv(x)
        x = torch.softmax(x, dim=1)
        x = self.pool1(x)
        return self.pool2(x)


def get_inputs():
    return [torch.randn(1, 3, 10, 10, 10)]


def get_init_inputs():
    return []
