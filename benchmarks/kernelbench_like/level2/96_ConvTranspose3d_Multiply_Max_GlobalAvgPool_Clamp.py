import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ConvTranspose3d Multiply Max GlobalAvgPool Clamp (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose3d(3, 8, 3, stride=2, padding=1, output_padding=1)
        self.maxpool = nn.MaxPool3d(kernel_size=2)
        self.global_avg_pool = nn.AdaptiveAvgPool3d((1, 1, 1))

    def forward(self, x):
        x = self.conv_transpose(x)
        x = x * 0.5
        x = self.maxpool(x)
        x = self.global_avg_pool(x)
        return torch.clamp(x, min=0, max=1)


def get_inputs():
    return [torch.randn(1, 3, 3, 4, 4)]


def get_init_inputs():
    return []
