"""LayerNorm over very long rows (millions of elements, few rows): the row is split into
chunks so that enough programs fill the GPU. Pass 1 keeps each chunk's mean and sum of
squared deviations; pass 2 merges a row's chunks (Chan's formula) and normalizes its chunk."""
import torch
import triton
import triton.language as tl
from torch import nn

CHUNK = 16384
BLOCK = 2048


@triton.jit
def chunk_stats_kernel(x_ptr, mean_ptr, m2_ptr, N, P, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    row, c = tl.program_id(0), tl.program_id(1)
    base = row.to(tl.int64) * N
    start = c * CHUNK
    acc = tl.zeros([BLOCK], tl.float32)
    for off in range(0, CHUNK, BLOCK):
        idx = start + off + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + base + idx, mask=idx < N, other=0.0)
    count = tl.minimum(N - start, CHUNK).to(tl.float32)
    mean = tl.sum(acc, 0) / count
    dev = tl.zeros([BLOCK], tl.float32)
    for off in range(0, CHUNK, BLOCK):
        idx = start + off + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + base + idx, mask=idx < N, other=0.0)
        d = tl.where(idx < N, v - mean, 0.0)
        dev += d * d
    tl.store(mean_ptr + row * P + c, mean)
    tl.store(m2_ptr + row * P + c, tl.sum(dev, 0))


@triton.jit
def normalize_kernel(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, m2_ptr, N, P, eps,
                     CHUNK: tl.constexpr, BLOCK: tl.constexpr, BLOCK_P: tl.constexpr):
    row, c = tl.program_id(0), tl.program_id(1)
    parts = tl.arange(0, BLOCK_P)
    valid = parts < P
    means = tl.load(mean_ptr + row * P + parts, mask=valid, other=0.0)
    m2s = tl.load(m2_ptr + row * P + parts, mask=valid, other=0.0)
    counts = tl.where(valid, tl.minimum(N - parts * CHUNK, CHUNK), 0).to(tl.float32)
    mean = tl.sum(counts * means, 0) / N
    spread = tl.where(valid, means - mean, 0.0)
    var = (tl.sum(m2s, 0) + tl.sum(counts * spread * spread, 0)) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    base = row.to(tl.int64) * N
    for off in range(0, CHUNK, BLOCK):
        idx = c * CHUNK + off + tl.arange(0, BLOCK)
        m = idx < N
        v = tl.load(x_ptr + base + idx, mask=m, other=0.0)
        w = tl.load(w_ptr + idx, mask=m, other=0.0)
        b = tl.load(b_ptr + idx, mask=m, other=0.0)
        tl.store(y_ptr + base + idx, (v - mean) * rstd * w + b, mask=m)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n = self.ln.weight.numel()
        rows = x.numel() // n
        parts = triton.cdiv(n, CHUNK)
        mean = torch.empty(rows, parts, device=x.device, dtype=torch.float32)
        m2 = torch.empty_like(mean)
        y = torch.empty_like(x)
        grid = (rows, parts)
        chunk_stats_kernel[grid](x, mean, m2, n, parts, CHUNK=CHUNK, BLOCK=BLOCK, num_warps=8)
        normalize_kernel[grid](x, self.ln.weight.contiguous(), self.ln.bias.contiguous(), y,
                               mean, m2, n, parts, self.ln.eps, CHUNK=CHUNK, BLOCK=BLOCK,
                               BLOCK_P=triton.next_power_of_2(parts), num_warps=8)
        return y
