"""A tiny KernelBench problem (relu(x) * 2) shared by the unit and browser tests."""
import torch
import torch.nn as nn

N = 64

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x) * 2.0

def get_inputs():
    return [torch.randn(N, N)]

def get_init_inputs():
    return []
