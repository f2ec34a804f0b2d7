"""Exact (erf) GELU, fp32, at KernelBench level 1 #26's shape (4096 x 393216)."""
import torch
from torch import nn
from torch.nn import functional as F

FAMILY = "activation"
DTYPE = torch.float32
batch_size = 4096
dim = 393216
TINY_SIZES = {"batch_size": 4, "dim": 128}
MIN_BYTES = 2 * batch_size * dim * DTYPE.itemsize
MIN_FLOPS = 0


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x)


def get_inputs():
    return [torch.randn(batch_size, dim, dtype=DTYPE)]


def get_init_inputs():
    return []
