"""Exact GELU on a half-precision (float16) activation of level 1 #26's shape."""
import torch
from torch import nn

FAMILY = "activation"
DTYPE = torch.float16
tokens = 4096
hidden = 393216
TINY_SIZES = {"tokens": 6, "hidden": 40}
MIN_BYTES = 2 * tokens * hidden * DTYPE.itemsize
MIN_FLOPS = 0


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.GELU()

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.act(hidden_states)


def get_inputs():
    return [torch.randn(tokens, hidden, dtype=DTYPE)]


def get_init_inputs():
    return []
