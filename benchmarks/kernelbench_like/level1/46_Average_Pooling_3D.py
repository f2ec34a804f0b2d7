import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Average Pooling 3D (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.avg_pool = nn.AvgPool3d(kernel_size=3, stride=2, padding=1)

    def forward(self, x):
        return self.avg_pool(x)


def get_inputs():
    return [torch.randn(2, 3, 9, 9, 9)]


def get_init_inputs():
    return []
