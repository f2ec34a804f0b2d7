"""2-D max pooling (4x4 window, stride 2, padding 1), fp32: 32 maps of 64 x 512 x 512."""
import torch
from torch import nn

FAMILY = "conv_pool"
DTYPE = torch.float32
batch_size = 32
channels = 64
height = 512
width = 512
kernel_size = 4
stride = 2
padding = 1
TINY_SIZES = {"batch_size": 2, "channels": 3, "height": 8, "width": 10}
out_h = (height + 2 * padding - kernel_size) // stride + 1
out_w = (width + 2 * padding - kernel_size) // stride + 1
MIN_BYTES = batch_size * channels * (height * width + out_h * out_w) * DTYPE.itemsize
MIN_FLOPS = 0


class Model(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width, dtype=DTYPE)]


def get_init_inputs():
    return [kernel_size, stride, padding]
