import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.blocks = nn.ModuleDict({'out': nn.Linear(16, 24), 'proj': nn.Linear(24, 8)})

    def forward(self, x):
        h = F.silu(self.blocks['out'](x))
        return self.blocks['proj'](h)


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return []
