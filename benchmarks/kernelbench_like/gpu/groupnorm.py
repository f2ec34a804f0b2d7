import torch
import torch.nn as nn

batch_size = 16
features = 64
groups = 8
size = 256


class Model(nn.Module):
    """GroupNorm(8, 64): the reduction family (split statistics, then the normalisation)."""

    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=groups, num_channels=features)

    def forward(self, x):
        return self.gn(x)


def get_inputs():
    return [torch.randn(batch_size, features, size, size)]


def get_init_inputs():
    return []
