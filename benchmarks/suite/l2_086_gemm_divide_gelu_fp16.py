"""Half-precision (float16) linear / 10 then GELU, at level 2 #86's shape
(1024 x 8192 -> 8192)."""
import torch
from torch import nn
from torch.nn import functional as F

FAMILY = "gemm_epilogue_lowp"
DTYPE = torch.float16
batch = 1024
features_in = 8192
features_out = 8192
TINY_SIZES = {"batch": 4, "features_in": 24, "features_out": 40}
MIN_BYTES = (batch * features_in + features_out * features_in + features_out
             + batch * features_out) * DTYPE.itemsize
MIN_FLOPS = 2 * batch * features_in * features_out


class Model(nn.Module):
    def __init__(self, features_in: int, features_out: int, divisor: float = 10.0):
        super().__init__()
        self.dense = nn.Linear(features_in, features_out, dtype=DTYPE)
        self.divisor = divisor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.dense(x) / self.divisor)


def get_inputs():
    return [torch.randn(batch, features_in, dtype=DTYPE)]


def get_init_inputs():
    return [features_in, features_out]
