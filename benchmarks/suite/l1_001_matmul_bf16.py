"""Square bfloat16 matmul (4096 x 4096 x 4096, level 1 #1's shape), fp32 accumulation."""
import torch
from torch import nn

FAMILY = "matmul"
DTYPE = torch.bfloat16
size = 4096
TINY_SIZES = {"size": 48}
MIN_BYTES = 3 * size * size * DTYPE.itemsize
MIN_FLOPS = 2 * size ** 3


class Model(nn.Module):
    def forward(self, left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
        return left @ right


def get_inputs():
    return [torch.randn(size, size, dtype=DTYPE), torch.randn(size, size, dtype=DTYPE)]


def get_init_inputs():
    return []
