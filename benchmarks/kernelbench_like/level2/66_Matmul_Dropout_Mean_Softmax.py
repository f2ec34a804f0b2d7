import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Matmul Dropout Mean Softmax (tiny shapes; KernelBench's pattern)"""

    def __init__(self):
        super().__init__()
        self.matmul = nn.Linear(20, 16)
        self.dropout = nn.Dropout(0.2)

    def forward(self, x):
        x = self.matmul(x)
        x = self.dropout(x)
        x = torch.mean(x, dim=1, keepdim=True)
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(8, 20)]


def get_init_inputs():
    return []
