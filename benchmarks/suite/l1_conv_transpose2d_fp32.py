"""A transposed 2-D convolution (4x4 kernel, stride 2, padding 1: a 2x upsampling), fp32:
16 maps of 64 x 128 x 128 into 32 channels."""
import torch
from torch import nn

FAMILY = "conv_pool"
DTYPE = torch.float32
batch_size = 16
in_channels = 64
out_channels = 32
height = 128
width = 128
kernel_size = 4
stride = 2
padding = 1
TINY_SIZES = {"batch_size": 1, "in_channels": 3, "out_channels": 2, "height": 5, "width": 4}
out_h = (height - 1) * stride - 2 * padding + kernel_size
out_w = (width - 1) * stride - 2 * padding + kernel_size
MIN_BYTES = (batch_size * in_channels * height * width
             + in_channels * out_channels * kernel_size ** 2 + out_channels
             + batch_size * out_channels * out_h * out_w) * DTYPE.itemsize
# each input pixel scatters into kernel_size^2 output pixels of every output channel
MIN_FLOPS = 2 * batch_size * in_channels * out_channels * kernel_size ** 2 * height * width


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int,
                 padding: int):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride,
                                         padding=padding, dtype=DTYPE)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.deconv(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width, dtype=DTYPE)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding]
