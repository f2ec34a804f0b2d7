import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A two-layer LSTM over a sequence (batch first), a Linear on the last step's output."""

    def __init__(self, input_size, hidden_size, num_layers, output_size, dropout=0.0):
        super(Model, self).__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, dropout=dropout, bidirectional=False)
        self.fc = nn.Linear(hidden_size, output_size)

    def forward(self, x):
        out, _ = self.lstm(x)
        out = self.fc(out[:, -1, :])
        return out


def get_inputs():
    return [torch.randn(2, 5, 6)]


def get_init_inputs():
    return [6, 8, 2, 3]
