import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """conv transposed 1D dilated (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv1d_transpose = nn.ConvTranspose1d(4, 6, 5, stride=1, padding=0, dilation=3, bias=False)

    def forward(self, x):
        return self.conv1d_transpose(x)


def get_inputs():
    return [torch.randn(2, 4, 17)]


def get_init_inputs():
    return []
