"""Bias-free linear, plus a separate bias vector, then ReLU; fp32 at level 2 #76's shape
(1024 x 8192 -> 8192)."""
import torch
from torch import nn

FAMILY = "gemm_epilogue"
DTYPE = torch.float32
batch_size = 1024
in_features = 8192
out_features = 8192
TINY_SIZES = {"batch_size": 4, "in_features": 48, "out_features": 32}
MIN_BYTES = (batch_size * in_features + out_features * in_features + out_features
             + batch_size * out_features) * DTYPE.itemsize
MIN_FLOPS = 2 * batch_size * in_features * out_features


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False, dtype=DTYPE)
        self.bias = nn.Parameter(torch.randn(out_features, dtype=DTYPE))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.gemm(x) + self.bias)


def get_inputs():
    return [torch.randn(batch_size, in_features, dtype=DTYPE)]


def get_init_inputs():
    return [in_features, out_features]
