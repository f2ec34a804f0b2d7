"""A strided 3-D transposed convolution (3x3x3, stride 2, padding 1, output padding 1: a 2x
upsampling) followed by LeakyReLU, a per-channel multiplier, LeakyReLU again and a 2x2x2 max
pool, fp32: 16 volumes of 16 x 16 x 32 x 32 into 32 channels (KernelBench level 2's pattern
at its official size)."""
import torch
from torch import nn
from torch.nn import functional as F

FAMILY = "conv_epilogue"
DTYPE = torch.float32
batch_size = 16
in_channels = 16
out_channels = 32
depth = 16
height = 32
width = 32
kernel_size = 3
stride = 2
padding = 1
output_padding = 1
TINY_SIZES = {"batch_size": 1, "in_channels": 2, "out_channels": 3, "depth": 2, "height": 3,
              "width": 2}
MIN_BYTES = (batch_size * in_channels * depth * height * width
             + in_channels * out_channels * kernel_size ** 3 + 2 * out_channels
             + batch_size * out_channels * depth * height * width) * DTYPE.itemsize
# each input voxel scatters into kernel_size^3 outputs of every output channel
MIN_FLOPS = 2 * batch_size * in_channels * out_channels * kernel_size ** 3 * depth * height \
    * width


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int,
                 padding: int, output_padding: int):
        super().__init__()
        self.deconv = nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride=stride,
                                         padding=padding, output_padding=output_padding,
                                         dtype=DTYPE)
        self.multiplier = nn.Parameter(torch.randn(out_channels, 1, 1, 1, dtype=DTYPE))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.leaky_relu(self.deconv(x), negative_slope=0.2)
        x = F.leaky_relu(x * self.multiplier, negative_slope=0.2)
        return F.max_pool3d(x, kernel_size=2)


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width, dtype=DTYPE)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, output_padding]
