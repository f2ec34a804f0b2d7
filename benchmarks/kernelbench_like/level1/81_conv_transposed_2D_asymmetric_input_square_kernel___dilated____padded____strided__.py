import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """conv transposed 2D asymmetric input square kernel   dilated    padded    strided (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv_transpose2d = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, dilation=2, bias=False)

    def forward(self, x):
        return self.conv_transpose2d(x)


def get_inputs():
    return [torch.randn(2, 4, 7, 9)]


def get_init_inputs():
    return []
