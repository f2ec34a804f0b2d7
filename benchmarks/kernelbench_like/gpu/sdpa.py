import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 16
heads = 16
length = 1024
head_dim = 64


class Model(nn.Module):
    """scaled_dot_product_attention: the FlashAttention-style attention family."""

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)


def get_inputs():
    shape = (batch_size, heads, length, head_dim)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []
