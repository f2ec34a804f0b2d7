"""A 3x3 2-D convolution (stride 1, no padding), fp32: 16 images of 64 x 256 x 256 into 128
channels (the runner turns cuDNN's tf32 default off under strict precision)."""
import torch
from torch import nn

FAMILY = "conv_pool"
DTYPE = torch.float32
batch_size = 16
in_channels = 64
out_channels = 128
height = 256
width = 256
kernel_size = 3
TINY_SIZES = {"batch_size": 1, "in_channels": 2, "out_channels": 3, "height": 6, "width": 5}
out_h = height - kernel_size + 1
out_w = width - kernel_size + 1
MIN_BYTES = (batch_size * in_channels * height * width
             + out_channels * in_channels * kernel_size ** 2 + out_channels
             + batch_size * out_channels * out_h * out_w) * DTYPE.itemsize
MIN_FLOPS = 2 * batch_size * out_channels * in_channels * kernel_size ** 2 * out_h * out_w


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, dtype=DTYPE)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width, dtype=DTYPE)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
