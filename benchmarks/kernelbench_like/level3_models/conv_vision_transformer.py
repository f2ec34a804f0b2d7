import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Convolutional ViT: strided conv patch embedding, Flatten, Linear projection to one token, a class token,
    batch-first TransformerEncoderLayers, a Linear head on the class token (tiny sizes)."""

    def __init__(self, num_classes, embed_dim=8, num_heads=2, num_layers=2, mlp_ratio=2.0, patch_size=4,
                 in_channels=3, image_size=8):
        super(Model, self).__init__()
        self.patch_size = patch_size
        self.conv1 = nn.Conv2d(in_channels, embed_dim, kernel_size=patch_size, stride=patch_size)
        self.flatten = nn.Flatten()
        self.linear_proj = nn.Linear(embed_dim * (image_size // patch_size) ** 2, embed_dim)
        self.transformer_layers = nn.ModuleList([
            nn.TransformerEncoderLayer(d_model=embed_dim, nhead=num_heads,
                                       dim_feedforward=int(embed_dim * mlp_ratio), dropout=0.0, batch_first=True)
            for _ in range(num_layers)
        ])
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.fc_out = nn.Linear(embed_dim, num_classes)

    def forward(self, x):
        B, C, H, W = x.shape
        x = self.conv1(x)
        x = self.flatten(x)
        x = self.linear_proj(x)
        cls_tokens = self.cls_token.expand(B, -1, -1)
        x = torch.cat((cls_tokens, x.unsqueeze(1)), dim=1)
        for layer in self.transformer_layers:
            x = layer(x)
        x = x[:, 0]
        x = self.fc_out(x)
        return x


def get_inputs():
    return [torch.randn(2, 3, 8, 8)]


def get_init_inputs():
    return [5, 8, 2, 2, 2.0, 4, 3, 8]
