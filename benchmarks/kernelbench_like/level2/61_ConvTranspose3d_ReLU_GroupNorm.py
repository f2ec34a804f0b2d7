import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ConvTranspose3d ReLU GroupNorm (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose3d(3, 8, 3, bias=False)
        self.relu = nn.ReLU()
        self.group_norm = nn.GroupNorm(num_groups=4, num_channels=8)

    def forward(self, x):
        x = self.conv_transpose(x)
        x = self.relu(x)
        return self.group_norm(x)


def get_inputs():
    return [torch.randn(1, 3, 3, 4, 4)]


def get_init_inputs():
    return []
