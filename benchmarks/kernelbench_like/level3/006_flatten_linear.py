import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.fc = nn.Linear(4 * 5 * 5, 10)

    def forward(self, x):
        x = x.view(-1, 4 * 5 * 5)
        return self.fc(x)


def get_inputs():
    return [torch.randn(2, 4, 5, 5)]


def get_init_inputs():
    return []
