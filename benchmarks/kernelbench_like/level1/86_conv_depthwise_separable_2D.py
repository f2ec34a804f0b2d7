import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """conv depthwise separable 2D (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.depthwise = nn.Conv2d(4, 4, 3, padding=1, groups=4, bias=False)
        self.pointwise = nn.Conv2d(4, 8, kernel_size=1, bias=False)

    def forward(self, x):
        x = self.depthwise(x)
        x = self.pointwise(x)
        return x


def get_inputs():
    return [torch.randn(2, 4, 12, 12)]


def get_init_inputs():
    return []
