"""LayerNorm over the last three dims with weight and bias, fp32, at level 1 #40's shape
(16 x 64 x 256 x 256, normalized over 64 x 256 x 256)."""
import torch
from torch import nn

FAMILY = "norm"
DTYPE = torch.float32
batch_size = 16
features = 64
dim1 = 256
dim2 = 256
TINY_SIZES = {"batch_size": 3, "features": 4, "dim1": 4, "dim2": 8}
# x read, y written, weight and bias read once
MIN_BYTES = (2 * batch_size + 2) * features * dim1 * dim2 * DTYPE.itemsize
MIN_FLOPS = 0


class Model(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.norm = nn.LayerNorm(normalized_shape, dtype=DTYPE)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2, dtype=DTYPE)]


def get_init_inputs():
    return [(features, dim1, dim2)]
