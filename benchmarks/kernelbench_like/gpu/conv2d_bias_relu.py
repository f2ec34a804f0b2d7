import torch
import torch.nn as nn

batch_size = 32
in_channels = 64
out_channels = 128
size = 64


class Model(nn.Module):
    """Conv2d 3x3 (padding 1) + per-channel bias + ReLU: the staged conv family."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1))

    def forward(self, x):
        return torch.relu(self.conv(x) + self.bias)


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size)]


def get_init_inputs():
    return []
