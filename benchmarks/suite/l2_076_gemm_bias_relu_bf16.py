"""bfloat16 linear layer (bias inside) and ReLU, level 2 #76's shape (1024 x 8192 -> 8192)."""
import torch
from torch import nn

FAMILY = "gemm_epilogue_lowp"
DTYPE = torch.bfloat16
tokens = 1024
d_in = 8192
d_out = 8192
TINY_SIZES = {"tokens": 16, "d_in": 32, "d_out": 32}
MIN_BYTES = (tokens * d_in + d_out * d_in + d_out + tokens * d_out) * DTYPE.itemsize
MIN_FLOPS = 2 * tokens * d_in * d_out


class Model(nn.Module):
    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        self.proj = nn.Linear(d_in, d_out, dtype=DTYPE)

    def forward(self, tokens_in: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.proj(tokens_in))


def get_inputs():
    return [torch.randn(tokens, d_in, dtype=DTYPE)]


def get_init_inputs():
    return [d_in, d_out]
