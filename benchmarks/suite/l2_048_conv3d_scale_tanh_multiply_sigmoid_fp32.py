"""A 3x3x3 3-D convolution of a 3-channel volume followed by a per-channel scale, tanh, a
per-channel multiplier and a sigmoid, fp32: 128 volumes of 3 x 16 x 64 x 64 into 16 channels
(KernelBench level 2's pattern at its official size; few input channels, so a flat K loop)."""
import torch
from torch import nn

FAMILY = "conv_epilogue"
DTYPE = torch.float32
batch_size = 128
in_channels = 3
out_channels = 16
depth = 16
height = 64
width = 64
kernel_size = 3
TINY_SIZES = {"batch_size": 1, "in_channels": 2, "out_channels": 3, "depth": 4, "height": 5,
              "width": 4}
out_d, out_h, out_w = (s - kernel_size + 1 for s in (depth, height, width))
MIN_BYTES = (batch_size * in_channels * depth * height * width
             + out_channels * in_channels * kernel_size ** 3 + 3 * out_channels
             + batch_size * out_channels * out_d * out_h * out_w) * DTYPE.itemsize
MIN_FLOPS = 2 * batch_size * out_channels * in_channels * kernel_size ** 3 * out_d * out_h \
    * out_w


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, dtype=DTYPE)
        self.scale = nn.Parameter(torch.randn(out_channels, 1, 1, 1, dtype=DTYPE))
        self.multiplier = nn.Parameter(torch.randn(out_channels, 1, 1, 1, dtype=DTYPE))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.tanh(self.conv(x) * self.scale)
        return torch.sigmoid(x * self.multiplier)


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width, dtype=DTYPE)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
