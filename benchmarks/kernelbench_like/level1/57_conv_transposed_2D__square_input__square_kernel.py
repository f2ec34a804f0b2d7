import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """conv transposed 2D  square input  square kernel (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv_transpose2d = nn.ConvTranspose2d(4, 6, 3, bias=False)

    def forward(self, x):
        return self.conv_transpose2d(x)


def get_inputs():
    return [torch.randn(2, 4, 8, 8)]


def get_init_inputs():
    return []
