"""Linear layer, times a constant, then LeakyReLU; fp32 at level 2 #12's shape
(batch 1024, 8192 -> 8192, multiplier 2.0, slope 0.1)."""
import torch
from torch import nn
from torch.nn import functional as F

FAMILY = "gemm_epilogue"
DTYPE = torch.float32
batch_size = 1024
in_features = 8192
out_features = 8192
multiplier = 2.0
negative_slope = 0.1
TINY_SIZES = {"batch_size": 8, "in_features": 32, "out_features": 16}
MIN_BYTES = (batch_size * in_features + out_features * in_features + out_features
             + batch_size * out_features) * DTYPE.itemsize
MIN_FLOPS = 2 * batch_size * in_features * out_features


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int, multiplier: float,
                 negative_slope: float):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, dtype=DTYPE)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.leaky_relu(self.gemm(x) * self.multiplier, self.negative_slope)


def get_inputs():
    return [torch.randn(batch_size, in_features, dtype=DTYPE)]


def get_init_inputs():
    return [in_features, out_features, multiplier, negative_slope]
