"""Square matmul C = A @ B, fp32, at KernelBench level 1 #1's shape (4096 x 4096 x 4096).
Strict precision: fp32 accuracy, so plain tf32 tensor-core math does not pass."""
import torch
from torch import nn

FAMILY = "matmul"
DTYPE = torch.float32
N = 4096
TINY_SIZES = {"N": 32}
MIN_BYTES = 3 * N * N * DTYPE.itemsize
MIN_FLOPS = 2 * N * N * N


class Model(nn.Module):
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(N, N, dtype=DTYPE), torch.randn(N, N, dtype=DTYPE)]


def get_init_inputs():
    return []
