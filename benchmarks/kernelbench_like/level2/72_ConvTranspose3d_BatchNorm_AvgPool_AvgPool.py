import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ConvTranspose3d BatchNorm AvgPool AvgPool (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose3d(3, 8, 3, stride=2, padding=1, output_padding=1)
        self.batch_norm = nn.BatchNorm3d(8)
        self.avg_pool1 = nn.AvgPool3d(kernel_size=2)
        self.avg_pool2 = nn.AvgPool3d(kernel_size=2)

    def forward(self, x):
        x = self.conv_transpose(x)
        x = self.batch_norm(x)
        x = self.avg_pool1(x)
        return self.avg_pool2(x)


def get_inputs():
    return [torch.randn(1, 3, 3, 4, 4)]


def get_init_inputs():
    return []
