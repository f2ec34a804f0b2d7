import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """GroupNorm (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=2, num_channels=4)

    def forward(self, x):
        return self.gn(x)


def get_inputs():
    return [torch.randn(2, 4, 10, 10)]


def get_init_inputs():
    return []
