"""Square half-precision (float16) matmul at level 1 #1's shape (4096^3)."""
import torch
from torch import nn

FAMILY = "matmul"
DTYPE = torch.float16
M = 4096
K = 4096
N = 4096
TINY_SIZES = {"M": 16, "K": 32, "N": 24}
MIN_BYTES = (M * K + K * N + M * N) * DTYPE.itemsize
MIN_FLOPS = 2 * M * N * K


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.mm(a, b)


def get_inputs():
    return [torch.randn(M, K, dtype=DTYPE), torch.randn(K, N, dtype=DTYPE)]


def get_init_inputs():
    return []
