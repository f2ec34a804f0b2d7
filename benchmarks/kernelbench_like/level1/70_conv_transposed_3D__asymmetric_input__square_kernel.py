import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """conv transposed 3D  asymmetric input  square kernel (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv_transpose3d = nn.ConvTranspose3d(4, 6, 3, bias=False)

    def forward(self, x):
        return self.conv_transpose3d(x)


def get_inputs():
    return [torch.randn(1, 4, 4, 6, 5)]


def get_init_inputs():
    return []
