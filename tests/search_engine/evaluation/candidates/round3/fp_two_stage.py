import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def partial_kernel(x_ptr, max_ptr, sum_ptr, n_cols, CHUNK: tl.constexpr, N_CHUNKS: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    offs = chunk * CHUNK + tl.arange(0, CHUNK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=0)
    tl.store(max_ptr + row * N_CHUNKS + chunk, m)
    tl.store(sum_ptr + row * N_CHUNKS + chunk, tl.sum(tl.exp(x - m), axis=0))


@triton.jit
def finish_kernel(x_ptr, max_ptr, sum_ptr, y_ptr, n_cols, CHUNK: tl.constexpr,
                  N_CHUNKS: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    parts = tl.arange(0, N_CHUNKS)
    maxes = tl.load(max_ptr + row * N_CHUNKS + parts)
    sums = tl.load(sum_ptr + row * N_CHUNKS + parts)
    m = tl.max(maxes, axis=0)
    total = tl.sum(sums * tl.exp(maxes - m), axis=0)
    offs = chunk * CHUNK + tl.arange(0, CHUNK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask)
    tl.store(y_ptr + row * n_cols + offs, tl.exp(x - m) / total, mask=mask)


class ModelNew(nn.Module):
    """False positive: a split-row two-stage reduction, two kernels and scratch buffers."""

    CHUNK = 64

    def forward(self, x):
        rows, cols = x.shape
        n_chunks = triton.cdiv(cols, self.CHUNK)
        maxes = torch.empty(rows, n_chunks, device=x.device, dtype=torch.float32)
        sums = torch.empty_like(maxes)
        y = torch.empty_like(x)
        grid = (rows, n_chunks)
        partial_kernel[grid](x, maxes, sums, cols, CHUNK=self.CHUNK, N_CHUNKS=n_chunks)
        finish_kernel[grid](x, maxes, sums, y, cols, CHUNK=self.CHUNK, N_CHUNKS=n_chunks)
        return y
