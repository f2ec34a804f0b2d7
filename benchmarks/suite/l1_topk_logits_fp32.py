"""The 50 largest logits of each of 1024 rows over a 131072-entry vocabulary, fp32 (top-k
sampling). Not in KernelBench; a selection that the offline synthesizer does not cover (an
honest row)."""
import torch
from torch import nn

FAMILY = "scan_select"
DTYPE = torch.float32
batch_size = 1024
vocab = 131072
k = 50
TINY_SIZES = {"batch_size": 2, "vocab": 64, "k": 5}
MIN_BYTES = (batch_size * vocab + batch_size * k) * DTYPE.itemsize
MIN_FLOPS = 0


class Model(nn.Module):
    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        return torch.topk(logits, self.k, dim=-1).values


def get_inputs():
    return [torch.randn(batch_size, vocab, dtype=DTYPE)]


def get_init_inputs():
    return [k]
