"""Linear, divided by a scalar, then exact GELU; fp32 at level 2 #86's shape
(1024 x 8192 -> 8192, divisor 10)."""
import torch
from torch import nn
from torch.nn import functional as F

FAMILY = "gemm_epilogue"
DTYPE = torch.float32
batch_size = 1024
input_size = 8192
output_size = 8192
divisor = 10.0
TINY_SIZES = {"batch_size": 8, "input_size": 16, "output_size": 24}
MIN_BYTES = (batch_size * input_size + output_size * input_size + output_size
             + batch_size * output_size) * DTYPE.itemsize
MIN_FLOPS = 2 * batch_size * input_size * output_size


class Model(nn.Module):
    def __init__(self, input_size: int, output_size: int, divisor: float):
        super().__init__()
        self.linear = nn.Linear(input_size, output_size, dtype=DTYPE)
        self.divisor = divisor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.linear(x) / self.divisor)


def get_inputs():
    return [torch.randn(batch_size, input_size, dtype=DTYPE)]


def get_init_inputs():
    return [input_size, output_size, divisor]
