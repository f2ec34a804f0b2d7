import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """EfficientNet's MBConv: 1x1 expand, strided depthwise conv, 1x1 project, ReLU6, BatchNorm, no residual."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, expand_ratio):
        super(Model, self).__init__()
        hidden_dim = in_channels * expand_ratio
        self.expand_conv = nn.Sequential(
            nn.Conv2d(in_channels, hidden_dim, kernel_size=1, stride=1, padding=0, bias=False),
            nn.BatchNorm2d(hidden_dim),
            nn.ReLU6(inplace=True)
        )
        self.depthwise_conv = nn.Sequential(
            nn.Conv2d(hidden_dim, hidden_dim, kernel_size=kernel_size, stride=stride, padding=(kernel_size - 1) // 2, groups=hidden_dim, bias=False),
            nn.BatchNorm2d(hidden_dim),
            nn.ReLU6(inplace=True)
        )
        self.project_conv = nn.Sequential(
            nn.Conv2d(hidden_dim, out_channels, kernel_size=1, stride=1, padding=0, bias=False),
            nn.BatchNorm2d(out_channels)
        )

    def forward(self, x):
        x = self.expand_conv(x)
        x = self.depthwise_conv(x)
        x = self.project_conv(x)
        return x


def get_inputs():
    return [torch.randn(2, 4, 9, 8)]


def get_init_inputs():
    return [4, 6, 5, 2, 3]
