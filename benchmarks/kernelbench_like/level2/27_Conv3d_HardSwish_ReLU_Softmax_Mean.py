import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv3d HardSwish ReLU Softmax Mean (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 8, 3)

    def forward(self, x):
        x = self.conv(x)
        x = F.hardswish(x)
        x = torch.relu(x)
        x = torch.softmax(x, dim=1)
        return torch.mean(x, dim=[2, 3, 4])


def get_inputs():
    return [torch.randn(2, 3, 6, 7, 7)]


def get_init_inputs():
    return []
