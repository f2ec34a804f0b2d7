"""Mean squared error of two fp32 tensors to one scalar, at level 1 #94's shape
(32768 x 32768)."""
import torch
from torch import nn

FAMILY = "reduction"
DTYPE = torch.float32
batch_size = 32768
dim = 32768
TINY_SIZES = {"batch_size": 4, "dim": 32}
MIN_BYTES = 2 * batch_size * dim * DTYPE.itemsize + DTYPE.itemsize
MIN_FLOPS = 0


class Model(nn.Module):
    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.mean((predictions - targets) ** 2)


def get_inputs():
    # uniform rather than KernelBench's heavy-tailed draw: cheap to make on the GPU
    return [torch.rand(batch_size, dim, dtype=DTYPE), torch.rand(batch_size, dim, dtype=DTYPE)]


def get_init_inputs():
    return []
