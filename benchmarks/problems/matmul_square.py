"""C = A @ B for square fp32 matrices. KernelBench level 1 #1's shape is N = 4096."""
import torch
from torch import nn

N = 4096


class Model(nn.Module):
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
