import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ConvTranspose2d MaxPool Hardtanh Mean Tanh (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose2d(3, 8, 3, stride=2, padding=1, output_padding=1)
        self.maxpool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.hardtanh = nn.Hardtanh(min_val=-1, max_val=1)

    def forward(self, x):
        x = self.conv_transpose(x)
        x = self.maxpool(x)
        x = self.hardtanh(x)
        x = torch.mean(x, dim=(2, 3), keepdim=True)
        return torch.tanh(x)


def get_inputs():
    return [torch.randn(2, 3, 5, 5)]


def get_init_inputs():
    return []
