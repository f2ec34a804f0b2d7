import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.layers = nn.ModuleList([nn.Linear(16, 32), nn.Linear(32, 12)])

    def forward(self, x):
        for layer in self.layers:
            x = F.silu(layer(x))
        return x


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return []
