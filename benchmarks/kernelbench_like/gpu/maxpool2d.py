import torch
import torch.nn as nn

batch_size = 32
channels = 64
size = 128


class Model(nn.Module):
    """MaxPool2d(3, stride 2, padding 1): the pooling family."""

    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(batch_size, channels, size, size)]


def get_init_inputs():
    return []
