"""GEMM + bias + ReLU: relu(x @ W^T + b) with x (batch_size, in_features), W (out, in).
The shape of KernelBench level 2 #76: 1024 x 8192 x 8192."""
import torch
from torch import nn

batch_size = 1024
in_features = 8192
out_features = 8192


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
