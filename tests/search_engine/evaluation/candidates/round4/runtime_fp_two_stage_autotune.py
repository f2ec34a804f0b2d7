# Honest: two-stage softmax with a scratch buffer of partial (max, sum) per column chunk,
# an autotuned stage 1, several @triton.jit helpers, and a heuristics-decorated stage 2.
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _chunk_stats(x):
    m = tl.max(x, axis=0)
    return m, tl.sum(tl.exp(x - m), axis=0)


@triton.jit
def _combine(m_a, s_a, m_b, s_b):
    m = tl.maximum(m_a, m_b)
    return m, s_a * tl.exp(m_a - m) + s_b * tl.exp(m_b - m)


@triton.autotune(configs=[triton.Config({"CHUNK": 8}), triton.Config({"CHUNK": 16})],
                 key=["n_cols"])
@triton.jit
def stats_kernel(x_ptr, pm_ptr, ps_ptr, n_cols, n_chunks, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.program_id(1)
    cols = c * CHUNK + tl.arange(0, CHUNK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    m, s = _chunk_stats(x)
    tl.store(pm_ptr + row * n_chunks + c, m)
    tl.store(ps_ptr + row * n_chunks + c, s)


@triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n_cols"])})
@triton.jit
def normalize_kernel(x_ptr, pm_ptr, ps_ptr, y_ptr, n_cols, row_stride, n_chunks,
                     BLOCK: tl.constexpr):
    row = tl.program_id(0)
    m = tl.load(pm_ptr + row * row_stride)
    s = tl.load(ps_ptr + row * row_stride)
    for c in range(1, n_chunks):
        m, s = _combine(m, s, tl.load(pm_ptr + row * row_stride + c),
                        tl.load(ps_ptr + row * row_stride + c))
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * n_cols + cols, tl.exp(x - m) / s, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        rows, n = x.shape
        max_chunks = triton.cdiv(n, 8)
        pm = torch.empty((rows, max_chunks), device=x.device, dtype=torch.float32)
        ps = torch.empty_like(pm)
        y = torch.empty_like(x)

        def grid(meta):
            return (rows, triton.cdiv(n, meta["CHUNK"]))

        stats_kernel[grid](x, pm, ps, n, max_chunks)
        # the scratch rows are max_chunks long whichever CHUNK won; only `used` are written
        used = triton.cdiv(n, stats_kernel.best_config.kwargs["CHUNK"])
        normalize_kernel[(rows,)](x, pm, ps, y, n, max_chunks, used)
        return y
