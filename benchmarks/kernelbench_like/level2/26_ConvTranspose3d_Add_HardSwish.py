import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ConvTranspose3d Add HardSwish (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose3d(3, 8, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x, add_input):
        x = self.conv_transpose(x)
        x = x + add_input
        return x * F.hardswish(x)


def get_inputs():
    return [torch.randn(1, 3, 3, 4, 4), torch.randn(1, 8, 6, 8, 8)]


def get_init_inputs():
    return []
