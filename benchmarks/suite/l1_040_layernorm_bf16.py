"""LayerNorm in bfloat16 (bf16 weight and bias) at level 1 #40's shape (16 x 64 x 256 x 256)."""
import torch
from torch import nn

FAMILY = "norm"
DTYPE = torch.bfloat16
batch = 16
channels = 64
height = 256
width = 256
TINY_SIZES = {"batch": 2, "channels": 3, "height": 8, "width": 4}
MIN_BYTES = (2 * batch + 2) * channels * height * width * DTYPE.itemsize
MIN_FLOPS = 0


class Model(nn.Module):
    def __init__(self, channels: int, height: int, width: int, eps: float = 1e-5):
        super().__init__()
        self.layer_norm = nn.LayerNorm((channels, height, width), eps=eps, dtype=DTYPE)

    def forward(self, activations: torch.Tensor) -> torch.Tensor:
        return self.layer_norm(activations)


def get_inputs():
    return [torch.randn(batch, channels, height, width, dtype=DTYPE)]


def get_init_inputs():
    return [channels, height, width]
