"""A 3x3 2-D convolution followed by instance normalisation and a division, fp32: 128 images
of 64 x 128 x 128 into 128 channels (KernelBench level 2's pattern at its official size)."""
import torch
from torch import nn

FAMILY = "conv_epilogue"
DTYPE = torch.float32
batch_size = 128
in_channels = 64
out_channels = 128
height = 128
width = 128
kernel_size = 3
divide_by = 2.0
TINY_SIZES = {"batch_size": 1, "in_channels": 2, "out_channels": 3, "height": 6, "width": 5}
out_h = height - kernel_size + 1
out_w = width - kernel_size + 1
MIN_BYTES = (batch_size * in_channels * height * width
             + out_channels * in_channels * kernel_size ** 2 + out_channels
             + batch_size * out_channels * out_h * out_w) * DTYPE.itemsize
MIN_FLOPS = 2 * batch_size * out_channels * in_channels * kernel_size ** 2 * out_h * out_w


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int,
                 divide_by: float):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, dtype=DTYPE)
        self.norm = nn.InstanceNorm2d(out_channels, dtype=DTYPE)
        self.divide_by = divide_by

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.conv(x)) / self.divide_by


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width, dtype=DTYPE)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, divide_by]
