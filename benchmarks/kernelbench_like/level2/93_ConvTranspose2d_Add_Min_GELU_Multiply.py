import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ConvTranspose2d Add Min GELU Multiply (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose2d(3, 8, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x):
        x = self.conv_transpose(x)
        x = x + 0.5
        x = torch.min(x, torch.tensor(0.0))
        x = F.gelu(x)
        return x * 2.0


def get_inputs():
    return [torch.randn(2, 3, 5, 5)]


def get_init_inputs():
    return []
