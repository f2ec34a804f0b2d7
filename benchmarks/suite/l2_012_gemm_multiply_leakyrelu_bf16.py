"""bfloat16 GEMM x 2.0 then LeakyReLU(0.1) at level 2 #12's shape (1024 x 8192 -> 8192)."""
import torch
from torch import nn

FAMILY = "gemm_epilogue_lowp"
DTYPE = torch.bfloat16
M = 1024
K = 8192
N = 8192
TINY_SIZES = {"M": 8, "K": 64, "N": 16}
MIN_BYTES = (M * K + N * K + N + M * N) * DTYPE.itemsize
MIN_FLOPS = 2 * M * N * K


class Model(nn.Module):
    def __init__(self, k: int, n: int, scale: float = 2.0, slope: float = 0.1):
        super().__init__()
        self.fc = nn.Linear(k, n, dtype=DTYPE)
        self.act = nn.LeakyReLU(slope)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.fc(x) * self.scale)


def get_inputs():
    return [torch.randn(M, K, dtype=DTYPE)]


def get_init_inputs():
    return [K, N]
