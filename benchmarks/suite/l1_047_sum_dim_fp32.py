"""Sum over the middle dim with keepdim, fp32, at level 1 #47's shape (128 x 4096 x 4095,
reduced over dim 1)."""
import torch
from torch import nn

FAMILY = "reduction"
DTYPE = torch.float32
batch_size = 128
dim1 = 4096
dim2 = 4095
reduce_dim = 1
TINY_SIZES = {"batch_size": 3, "dim1": 16, "dim2": 15}
MIN_BYTES = (batch_size * dim1 * dim2 + batch_size * dim2) * DTYPE.itemsize
MIN_FLOPS = 0


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2, dtype=DTYPE)]


def get_init_inputs():
    return [reduce_dim]
