"""Softmax over the last dim, fp32, at KernelBench level 1 #23's shape (4096 x 393216)."""
import torch
from torch import nn

FAMILY = "softmax"
DTYPE = torch.float32
batch_size = 4096
dim = 393216
TINY_SIZES = {"batch_size": 4, "dim": 96}
MIN_BYTES = 2 * batch_size * dim * DTYPE.itemsize  # x read once, y written once
MIN_FLOPS = 0


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(batch_size, dim, dtype=DTYPE)]


def get_init_inputs():
    return []
