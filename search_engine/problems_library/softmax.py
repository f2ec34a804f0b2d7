"""Row-wise softmax (KernelBench level 1 style). Small sizes; GPU sizes in problems_library."""
import torch
from torch import nn

batch_size = 32
dim = 256


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
