"""MinGPT's tanh-approximated GELU written out in torch ops, fp32, at level 1 #88's shape
(8192 x 8192)."""
import math

import torch
from torch import nn

FAMILY = "activation"
DTYPE = torch.float32
batch_size = 8192
dim = 8192
TINY_SIZES = {"batch_size": 8, "dim": 24}
MIN_BYTES = 2 * batch_size * dim * DTYPE.itemsize
MIN_FLOPS = 0


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))
        return 0.5 * x * (1.0 + torch.tanh(inner))


def get_inputs():
    return [torch.randn(batch_size, dim, dtype=DTYPE)]


def get_init_inputs():
    return []
