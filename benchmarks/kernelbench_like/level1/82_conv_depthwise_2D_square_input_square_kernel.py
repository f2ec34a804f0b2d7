import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """conv depthwise 2D square input square kernel (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv2d = nn.Conv2d(4, 4, 3, stride=1, padding=0, groups=4, bias=False)

    def forward(self, x):
        return self.conv2d(x)


def get_inputs():
    return [torch.randn(2, 4, 12, 12)]


def get_init_inputs():
    return []
