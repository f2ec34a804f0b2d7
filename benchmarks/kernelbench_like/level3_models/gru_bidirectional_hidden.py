import torch
import torch.nn as nn


class Model(nn.Module):
    """A two-layer bidirectional GRU (time first) from a given state; every final state."""

    def __init__(self, input_size, hidden_size, num_layers=2):
        super(Model, self).__init__()
        self.gru = nn.GRU(input_size, hidden_size, num_layers, bias=True, batch_first=False,
                          dropout=0, bidirectional=True)

    def forward(self, x, h0):
        output, h_n = self.gru(x, h0)
        return h_n


def get_inputs():
    return [torch.rand(7, 2, 4), torch.rand(4, 2, 6)]


def get_init_inputs():
    return [4, 6, 2]
