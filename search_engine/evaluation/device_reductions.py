"""One-pass reductions the trusted side runs over trial tensors on the GPU (they also run
on the Triton interpreter, for the tests). At KernelBench's official sizes a trial is several
GB: torch's chunked versions read it a dozen times, these once.

- `diff_partials`: the statistics of `correctness.DiffStats`;
- `fingerprint_partials`: the two integer sums `reference_resident._fingerprint` compares to
  notice a candidate writing into its inputs (int64 arithmetic wraps: the sums are equal
  mod 2**64 whatever the order, and only equality matters)."""

from __future__ import annotations

import triton  # imported only where a reduction runs (correctness, reference_resident)
import triton.language as tl

BLOCK = 4096


@triton.jit
def diff_stats_kernel(out_ptr, ref_ptr, parts_ptr, n, abs_bound, rtol,
                      BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    o = tl.load(out_ptr + offs, mask=mask, other=0.0).to(tl.float64)
    r = tl.load(ref_ptr + offs, mask=mask, other=0.0).to(tl.float64)
    inf = float("inf")
    nonfinite = mask & ((o != o) | (tl.abs(o) == inf))
    diff = tl.abs(o - r)
    diff_ok = (diff == diff) & (diff != inf)
    counted = tl.where(mask, tl.where(diff_ok, diff, 1e30), 0.0)  # NONFINITE_DIFF
    ra = tl.abs(r)
    rel = tl.where(mask, diff / tl.maximum(ra, 1e-12), 0.0)
    over = mask & (diff > abs_bound + rtol * ra)
    base = parts_ptr + pid * 6
    tl.store(base + 0, tl.sum(nonfinite.to(tl.float64), axis=0))
    tl.store(base + 1, tl.sum(counted * counted, axis=0))
    tl.store(base + 2, tl.sum(tl.where(mask, r * r, 0.0), axis=0))
    tl.store(base + 3, tl.max(tl.where(mask, diff, 0.0), axis=0))
    tl.store(base + 4, tl.max(rel, axis=0))
    tl.store(base + 5, tl.sum(over.to(tl.float64), axis=0))

@triton.jit
def fingerprint_kernel(words_ptr, parts_ptr, n, modulus, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    w = tl.load(words_ptr + offs, mask=mask, other=0).to(tl.int64)
    weights = offs % modulus + 1
    tl.store(parts_ptr + pid * 2, tl.sum(w, axis=0))
    tl.store(parts_ptr + pid * 2 + 1, tl.sum(w * weights, axis=0))


def diff_partials(out, ref, abs_bound: float, rtol: float) -> tuple[list[float], list[float]]:
    """([nonfinite, diff_sq, ref_sq, over], [max_abs, max_rel]) of out against ref."""
    import torch

    n = out.numel()
    programs = triton.cdiv(n, BLOCK)
    parts = torch.empty((programs, 6), dtype=torch.float64, device=out.device)
    diff_stats_kernel[(programs,)](out.reshape(-1), ref.reshape(-1), parts, n,
                                    float(abs_bound), float(rtol), BLOCK=BLOCK)
    sums = parts[:, [0, 1, 2, 5]].sum(dim=0).tolist()
    maxes = parts[:, [3, 4]].max(dim=0).values.tolist()
    return sums, maxes


def fingerprint_partials(words, modulus: int) -> list[int]:
    """[sum of words, sum of words * (index % modulus + 1)] over int32 `words`, wrapping."""
    import torch

    n = words.numel()
    programs = triton.cdiv(n, BLOCK)
    parts = torch.empty((programs, 2), dtype=torch.int64, device=words.device)
    fingerprint_kernel[(programs,)](words, parts, n, modulus, BLOCK=BLOCK)
    return [int(v) for v in parts.sum(dim=0).tolist()]
