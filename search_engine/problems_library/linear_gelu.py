"""Linear layer followed by GELU: gelu(x @ W^T + b) (a matmul with a fused epilogue).

Small sizes for the CPU interpreter; realistic GPU sizes: M=4096, K=4096, N=4096.
"""
import torch
import torch.nn.functional as F
from torch import nn

M = 32
K = 64
N = 64


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.linear(x))


def get_inputs():
    return [torch.randn(M, K)]


def get_init_inputs():
    return [K, N]
