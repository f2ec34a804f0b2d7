"""bfloat16 linear, minus 2.0, times 1.5, then ReLU, at level 2 #9's shape
(1024 x 8192 -> 8192)."""
import torch
from torch import nn

FAMILY = "gemm_epilogue_lowp"
DTYPE = torch.bfloat16
batch_size = 1024
in_features = 8192
out_features = 8192
subtract_value = 2.0
multiply_value = 1.5
TINY_SIZES = {"batch_size": 8, "in_features": 32, "out_features": 48}
MIN_BYTES = (batch_size * in_features + out_features * in_features + out_features
             + batch_size * out_features) * DTYPE.itemsize
MIN_FLOPS = 2 * batch_size * in_features * out_features


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int, subtract_value: float,
                 multiply_value: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, dtype=DTYPE)
        self.subtract_value = subtract_value
        self.multiply_value = multiply_value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shifted = (self.linear(x) - self.subtract_value) * self.multiply_value
        return torch.relu(shifted)


def get_inputs():
    return [torch.randn(batch_size, in_features, dtype=DTYPE)]


def get_init_inputs():
    return [in_features, out_features, subtract_value, multiply_value]
