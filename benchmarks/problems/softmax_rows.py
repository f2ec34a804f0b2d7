"""Softmax over the last dimension of a (batch_size, dim) fp32 tensor.
KernelBench level 1 #23's shape is batch_size=4096, dim=393216 (`--size dim=393216`)."""
import torch
from torch import nn

batch_size = 4096
dim = 16384


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
