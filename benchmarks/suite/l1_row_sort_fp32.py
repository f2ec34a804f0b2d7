"""Sort every row of a 4096 x 32768 fp32 matrix (values only). Not in KernelBench; a
data-dependent permutation that the offline synthesizer does not cover (an honest row)."""
import torch
from torch import nn

FAMILY = "scan_select"
DTYPE = torch.float32
rows = 4096
cols = 32768
TINY_SIZES = {"rows": 3, "cols": 16}
MIN_BYTES = 2 * rows * cols * DTYPE.itemsize
MIN_FLOPS = 0


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sort(x, dim=-1).values


def get_inputs():
    return [torch.randn(rows, cols, dtype=DTYPE)]


def get_init_inputs():
    return []
