"""Log-softmax over dim 1, fp32, at KernelBench level 1 #24's shape (4096 x 393216)."""
import torch
from torch import nn

FAMILY = "softmax"
DTYPE = torch.float32
batch_size = 4096
dim = 393216
TINY_SIZES = {"batch_size": 5, "dim": 64}
MIN_BYTES = 2 * batch_size * dim * DTYPE.itemsize
MIN_FLOPS = 0


class Model(nn.Module):
    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(x, dim=self.dim)


def get_inputs():
    return [torch.randn(batch_size, dim, dtype=DTYPE)]


def get_init_inputs():
    return [1]
