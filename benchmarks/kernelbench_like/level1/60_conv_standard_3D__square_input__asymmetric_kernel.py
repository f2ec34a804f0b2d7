import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """conv standard 3D  square input  asymmetric kernel (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv3d = nn.Conv3d(3, 8, (3, 5, 7), bias=False)

    def forward(self, x):
        return self.conv3d(x)


def get_inputs():
    return [torch.randn(1, 3, 9, 9, 9)]


def get_init_inputs():
    return []
