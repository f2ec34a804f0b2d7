import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Attention over a feature map's positions: nn.MultiheadAttention, a residual and a LayerNorm."""

    def __init__(self, embed_dim, num_heads):
        super(Model, self).__init__()
        self.attn = nn.MultiheadAttention(embed_dim, num_heads)
        self.norm = nn.LayerNorm(embed_dim)

    def forward(self, x):
        B, C, H, W = x.shape
        x = x.view(B, C, H * W).permute(2, 0, 1)
        attn_output, _ = self.attn(x, x, x)
        x = self.norm(attn_output + x)
        x = x.permute(1, 2, 0).view(B, C, H, W)
        return x


def get_inputs():
    return [torch.randn(2, 8, 3, 4)]


def get_init_inputs():
    return [8, 2]
