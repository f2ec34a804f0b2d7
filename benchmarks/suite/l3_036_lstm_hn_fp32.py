"""A 6-layer LSTM over a batch-first sequence from given states, returning the final hidden
states; fp32 at level 3 #36's shape (10 x 512 steps x 128 -> 256 hidden)."""
import torch
from torch import nn

FAMILY = "recurrent"
DTYPE = torch.float32
batch_size = 10
sequence_length = 512
input_size = 128
hidden_size = 256
num_layers = 6
TINY_SIZES = {"batch_size": 2, "sequence_length": 4, "input_size": 3, "hidden_size": 4,
              "num_layers": 2}
_STATE = num_layers * batch_size * hidden_size
_WEIGHTS = sum(4 * hidden_size * ((input_size if layer == 0 else hidden_size) + hidden_size + 2)
               for layer in range(num_layers))
MIN_BYTES = (batch_size * sequence_length * input_size + 3 * _STATE + _WEIGHTS) \
    * DTYPE.itemsize
MIN_FLOPS = sum(2 * sequence_length * batch_size * 4 * hidden_size
                * ((input_size if layer == 0 else hidden_size) + hidden_size)
                for layer in range(num_layers))


class Model(nn.Module):
    def __init__(self, input_size: int, hidden_size: int, num_layers: int):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True,
                            dtype=DTYPE)

    def forward(self, x: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor) -> torch.Tensor:
        _, state = self.lstm(x, (h0, c0))
        return state[0]


def get_inputs():
    return [torch.rand(batch_size, sequence_length, input_size, dtype=DTYPE),
            torch.rand(num_layers, batch_size, hidden_size, dtype=DTYPE),
            torch.rand(num_layers, batch_size, hidden_size, dtype=DTYPE)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
