import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Average Pooling 2D (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.avg_pool = nn.AvgPool2d(kernel_size=3)

    def forward(self, x):
        return self.avg_pool(x)


def get_inputs():
    return [torch.randn(2, 4, 17, 17)]


def get_init_inputs():
    return []
