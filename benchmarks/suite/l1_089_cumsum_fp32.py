"""Inclusive prefix sum (a scan) along dim 1, fp32, at level 1 #89's shape (32768 x 32768)."""
import torch
from torch import nn

FAMILY = "scan_select"
DTYPE = torch.float32
batch_size = 32768
length = 32768
TINY_SIZES = {"batch_size": 3, "length": 40}
MIN_BYTES = 2 * batch_size * length * DTYPE.itemsize
MIN_FLOPS = 0


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=self.dim)


def get_inputs():
    return [torch.randn(batch_size, length, dtype=DTYPE)]


def get_init_inputs():
    return [1]
