import torch
import torch.nn as nn

b, i, j, l, k = 8, 64, 256, 256, 512


class Model(nn.Module):
    """A 4-D tensor times a matrix written as einsum: the batched-matmul family."""

    def forward(self, A, B):
        return torch.einsum("bijl,lk->bijk", A, B)


def get_inputs():
    return [torch.randn(b, i, j, l), torch.randn(l, k)]


def get_init_inputs():
    return []
