import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """SqueezeNet's fire module: a 1x1 squeeze, then 1x1 and 3x3 expands concatenated."""

    def __init__(self, in_channels, squeeze_channels, expand1x1_channels, expand3x3_channels):
        super(Model, self).__init__()
        self.squeeze = nn.Conv2d(in_channels, squeeze_channels, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze_channels, expand1x1_channels, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze_channels, expand3x3_channels, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.squeeze_activation(self.squeeze(x))
        return torch.cat([
            self.expand1x1_activation(self.expand1x1(x)),
            self.expand3x3_activation(self.expand3x3(x))
        ], 1)


def get_inputs():
    return [torch.randn(2, 6, 8, 7)]


def get_init_inputs():
    return [6, 3, 4, 5]
