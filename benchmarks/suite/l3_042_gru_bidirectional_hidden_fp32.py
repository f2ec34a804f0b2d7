"""A 6-layer bidirectional GRU over a time-major sequence from a given state, returning
every layer's and direction's final hidden state; fp32 at level 3 #42's shape (512 steps x 3
x 64 -> 128 hidden)."""
import torch
from torch import nn

FAMILY = "recurrent"
DTYPE = torch.float32
batch_size = 3
seq_len = 512
input_size = 64
hidden_size = 128
num_layers = 6
TINY_SIZES = {"batch_size": 2, "seq_len": 4, "input_size": 3, "hidden_size": 4,
              "num_layers": 2}
_STATE = 2 * num_layers * batch_size * hidden_size
_WEIGHTS = sum(2 * 3 * hidden_size * ((input_size if layer == 0 else 2 * hidden_size)
                                      + hidden_size + 2) for layer in range(num_layers))
MIN_BYTES = (seq_len * batch_size * input_size + 2 * _STATE + _WEIGHTS) * DTYPE.itemsize
MIN_FLOPS = sum(2 * 2 * seq_len * batch_size * 3 * hidden_size
                * ((input_size if layer == 0 else 2 * hidden_size) + hidden_size)
                for layer in range(num_layers))


class Model(nn.Module):
    def __init__(self, input_size: int, hidden_size: int, num_layers: int):
        super().__init__()
        self.gru = nn.GRU(input_size, hidden_size, num_layers, bidirectional=True,
                          dtype=DTYPE)

    def forward(self, x: torch.Tensor, h0: torch.Tensor) -> torch.Tensor:
        _, h_n = self.gru(x, h0)
        return h_n


def get_inputs():
    return [torch.rand(seq_len, batch_size, input_size, dtype=DTYPE),
            torch.rand(2 * num_layers, batch_size, hidden_size, dtype=DTYPE)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
