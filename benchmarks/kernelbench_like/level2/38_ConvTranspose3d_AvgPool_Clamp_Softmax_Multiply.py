import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ConvTranspose3d AvgPool Clamp Softmax Multiply (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose3d(3, 8, 3, stride=2, padding=1, output_padding=1)
        self.avg_pool = nn.AvgPool3d(2)

    def forward(self, x):
        x = self.conv_transpose(x)
        x = self.avg_pool(x)
        x = torch.clamp(x, 0.0, 1.0)
        x = torch.softmax(x, dim=1)
        return x * 2


def get_inputs():
    return [torch.randn(1, 3, 3, 4, 4)]


def get_init_inputs():
    return []
