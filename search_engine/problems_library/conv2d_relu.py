"""A 2-D convolution (3x3, same padding) followed by ReLU: an implicit-GEMM conv with a
fused epilogue in the offline synthesizer."""
import torch
from torch import nn

batch_size = 2
channels = 4
size = 8


class Model(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size=3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(batch_size, channels, size, size)]


def get_init_inputs():
    return [channels]
