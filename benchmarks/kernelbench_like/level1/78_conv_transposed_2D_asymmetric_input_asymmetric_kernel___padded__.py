import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """conv transposed 2D asymmetric input asymmetric kernel   padded (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv_transpose2d = nn.ConvTranspose2d(4, 6, (3, 5), stride=(1, 1), padding=(1, 2), bias=False)

    def forward(self, x):
        return self.conv_transpose2d(x)


def get_inputs():
    return [torch.randn(2, 4, 8, 11)]


def get_init_inputs():
    return []
