import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ConvTranspose3d Scaling AvgPool BiasAdd Scaling (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose3d(3, 8, 3, stride=2, padding=1, output_padding=1)
        self.scale1 = nn.Parameter(torch.tensor(0.5))
        self.avg_pool = nn.AvgPool3d(kernel_size=2)
        self.bias = nn.Parameter(torch.randn(8, 1, 1, 1))
        self.scale2 = nn.Parameter(torch.tensor(1.0))

    def forward(self, x):
        x = self.conv_transpose(x)
        x = x * self.scale1
        x = self.avg_pool(x)
        x = x + self.bias
        return x * self.scale2


def get_inputs():
    return [torch.randn(1, 3, 3, 4, 4)]


def get_init_inputs():
    return []
