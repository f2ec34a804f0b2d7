# Honest: linear layer as the candidate's own Triton-backed submodule (parameters named like
# the reference's), applied through an nn.ModuleList of the candidate's own modules, a
# register_buffer scratch, tl.dot(input_precision="ieee") and a bias epilogue helper.
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _bias_epilogue(acc, bias_ptr, rn, N):
    return acc + tl.load(bias_ptr + rn, mask=rn < N, other=0.0)[None, :]


@triton.jit
def linear_kernel(x_ptr, w_ptr, bias_ptr, y_ptr, M, N, K,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(x_ptr + rm[:, None] * K + rk[None, :],
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * K + rk[:, None],
                    mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0)
        acc = tl.dot(a, w, acc, input_precision="ieee")
    acc = _bias_epilogue(acc, bias_ptr, rn, N)
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


class TritonLinear(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n, k))
        self.bias = nn.Parameter(torch.empty(n))

    def forward(self, x):
        x = x.contiguous()
        M, K = x.shape
        N = self.weight.shape[0]
        y = x.new_empty((M, N))
        linear_kernel[(triton.cdiv(M, 16), triton.cdiv(N, 16))](
            x, self.weight, self.bias, y, M, N, K, BM=16, BN=16, BK=32)
        return y


class ModelNew(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.linear = TritonLinear(k, n)
        self.stages = nn.ModuleList([self.linear])

    def forward(self, x):
        for stage in self.stages:
            x = stage(x)
        return x
