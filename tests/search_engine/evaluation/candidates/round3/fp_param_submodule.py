import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def linear_kernel(x_ptr, w_ptr, b_ptr, s_ptr, y_ptr, K, N, BLOCK_K: tl.constexpr,
                  BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    k = tl.arange(0, BLOCK_K)
    n = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * K + k, mask=k < K, other=0.0)
    w = tl.load(w_ptr + n[:, None] * K + k[None, :], mask=(n[:, None] < N) & (k[None, :] < K),
                other=0.0)
    acc = tl.sum(w * x[None, :], axis=1)
    acc += tl.load(b_ptr + n, mask=n < N, other=0.0)
    acc *= tl.load(s_ptr)
    tl.store(y_ptr + row * N + n, acc, mask=n < N)


class TritonLinear(nn.Module):
    """A custom Parameter submodule with a buffer beside its parameters."""

    def __init__(self, k, n):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n, k) / k ** 0.5)
        self.bias = nn.Parameter(torch.zeros(n))
        self.register_buffer("scale", torch.ones(1), persistent=False)

    def forward(self, x):
        rows, k = x.shape
        n = self.weight.shape[0]
        y = torch.empty(rows, n, device=x.device, dtype=x.dtype)
        linear_kernel[(rows,)](x, self.weight, self.bias, self.scale, y, k, n,
                               BLOCK_K=triton.next_power_of_2(k), BLOCK_N=triton.next_power_of_2(n))
        return y


class ModelNew(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.linear = TritonLinear(k, n)

    def forward(self, x):
        return self.linear(x)
