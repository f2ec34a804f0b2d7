import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """conv pointwise 2D (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv1d = nn.Conv2d(4, 8, kernel_size=1, bias=False)

    def forward(self, x):
        return self.conv1d(x)


def get_inputs():
    return [torch.randn(2, 4, 12, 12)]


def get_init_inputs():
    return []
