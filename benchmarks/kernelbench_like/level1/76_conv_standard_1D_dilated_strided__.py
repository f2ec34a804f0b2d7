import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """conv standard 1D dilated strided (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv1d = nn.Conv1d(3, 8, 3, stride=3, dilation=4, bias=False)

    def forward(self, x):
        return self.conv1d(x)


def get_inputs():
    return [torch.randn(2, 3, 60)]


def get_init_inputs():
    return []
