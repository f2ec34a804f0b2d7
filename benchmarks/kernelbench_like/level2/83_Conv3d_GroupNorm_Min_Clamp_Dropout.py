import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv3d GroupNorm Min Clamp Dropout (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 8, 3)
        self.norm = nn.GroupNorm(4, 8)
        self.dropout = nn.Dropout(0.2)

    def forward(self, x):
        x = self.conv(x)
        x = self.norm(x)
        x = torch.min(x, torch.tensor(0.0))
        x = torch.clamp(x, min=0.0, max=1.0)
        return self.dropout(x)


def get_inputs():
    return [torch.randn(2, 3, 6, 7, 7)]


def get_init_inputs():
    return []
