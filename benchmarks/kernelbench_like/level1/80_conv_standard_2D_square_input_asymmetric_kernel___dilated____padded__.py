import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """conv standard 2D square input asymmetric kernel   dilated    padded (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv2d = nn.Conv2d(3, 8, (3, 5), stride=1, padding=(1, 2), dilation=(2, 1), bias=False)

    def forward(self, x):
        return self.conv2d(x)


def get_inputs():
    return [torch.randn(2, 3, 12, 12)]


def get_init_inputs():
    return []
