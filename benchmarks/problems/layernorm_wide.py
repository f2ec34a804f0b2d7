"""LayerNorm over the last three dims of a (batch, features, d1, d2) fp32 tensor, with the
affine weight and bias. KernelBench level 1 #40's shape is 16 x 64 x 256 x 256."""
import torch
from torch import nn

batch_size = 16
features = 64
dim1 = 256
dim2 = 256


class Model(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [(features, dim1, dim2)]
