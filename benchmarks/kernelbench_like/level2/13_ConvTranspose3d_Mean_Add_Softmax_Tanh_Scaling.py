import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ConvTranspose3d Mean Add Softmax Tanh Scaling (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose3d(3, 8, 3, stride=2, padding=1, output_padding=1)
        self.bias = nn.Parameter(torch.randn(1, 1, 1, 1, 1))

    def forward(self, x):
        x = self.conv_transpose(x)
        x = x.mean(dim=1, keepdim=True)
        x = x + self.bias
        x = torch.softmax(x, dim=1)
        x = torch.tanh(x)
        return x * 2.0


def get_inputs():
    return [torch.randn(1, 3, 3, 4, 4)]


def get_init_inputs():
    return []
