import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """conv transposed 3D asymmetric input asymmetric kernel   strided padded grouped (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv_transpose3d = nn.ConvTranspose3d(4, 8, (3, 5, 7), stride=(2, 2, 2), padding=(1, 2, 3), output_padding=(1, 1, 1), groups=4, bias=False)

    def forward(self, x):
        return self.conv_transpose3d(x)


def get_inputs():
    return [torch.randn(1, 4, 4, 5, 6)]


def get_init_inputs():
    return []
