import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A GRU over a sequence (time first), returning every step's output."""

    def __init__(self, input_size, hidden_size, num_layers=2, bias=True, batch_first=False):
        super(Model, self).__init__()
        self.gru = nn.GRU(input_size, hidden_size, num_layers, bias, batch_first, dropout=0, bidirectional=False)

    def forward(self, x):
        output, h_n = self.gru(x)
        return output


def get_inputs():
    return [torch.randn(5, 2, 6)]


def get_init_inputs():
    return [6, 8, 2]
