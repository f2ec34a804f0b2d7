import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """MobileNetV2's inverted residual: 1x1 expand, depthwise 3x3, 1x1 project, ReLU6, residual."""

    def __init__(self, channels, expand_ratio):
        super(Model, self).__init__()
        hidden = channels * expand_ratio
        self.block = nn.Sequential(
            nn.Conv2d(channels, hidden, 1, 1, 0, bias=False),
            nn.BatchNorm2d(hidden),
            nn.ReLU6(inplace=True),
            nn.Conv2d(hidden, hidden, 3, 1, 1, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden),
            nn.ReLU6(inplace=True),
            nn.Conv2d(hidden, channels, 1, 1, 0, bias=False),
            nn.BatchNorm2d(channels),
        )

    def forward(self, x):
        return x + self.block(x)


def get_inputs():
    return [torch.randn(2, 4, 7, 9)]


def get_init_inputs():
    return [4, 3]
