"""Compare a candidate's outputs with the float64 reference (trusted side: the parent, or the
problem's sandbox when tensors stay on the device).

Every comparison reduces to one set of statistics over `out - ref` (`DiffStats`). On a GPU
they come from one fused Triton pass that reads each tensor once; elsewhere from torch, in
chunks so that outputs of many GB compare in bounded memory. Both give the same numbers."""

from __future__ import annotations

from dataclasses import dataclass

from search_engine.evaluation.result import TrialError
from search_engine.evaluation.tolerances import Tolerance

NONFINITE_DIFF = 1e30  # what a NaN or infinite difference counts as in the norms


@dataclass
class DiffStats:
    nonfinite: int = 0      # NaN/Inf values in the output
    diff_sq: float = 0.0    # sum of squared differences (a non-finite one as NONFINITE_DIFF)
    ref_sq: float = 0.0     # sum of squared reference values
    max_abs: float = 0.0
    max_rel: float = 0.0    # |out - ref| / max(|ref|, 1e-12)
    over: int = 0           # elements with |out - ref| > abs_bound + rtol * |ref|


def compare_trial(trial: int, seed: int, outputs: list, reference: list, expected_dtypes: list[str],
                  tol: Tolerance) -> TrialError:
    def fail(note: str, abs_err=None, rel_err=None, norm=None) -> TrialError:
        return TrialError(trial, seed, abs_err, rel_err, norm, False, note)

    if len(outputs) != len(reference):
        return fail(f"returned {len(outputs)} outputs, expected {len(reference)}")
    worst = (0.0, 0.0, 0.0)
    for i, (out, ref) in enumerate(zip(outputs, reference)):
        if tuple(out.shape) != tuple(ref.shape):
            return fail(f"output {i}: shape {list(out.shape)}, expected {list(ref.shape)}")
        if i < len(expected_dtypes) and str(out.dtype) != expected_dtypes[i]:
            return fail(f"output {i}: dtype {out.dtype}, expected {expected_dtypes[i]}")
        ref_norm = reference_norm(ref)
        rms = ref_norm / max(ref.numel(), 1) ** 0.5
        stats = diff_stats(out, ref, tol.atol_rms * rms, tol.rtol)
        if out.is_floating_point() and stats.nonfinite:
            return fail(f"output {i}: {stats.nonfinite} NaN/Inf values")
        norm_err = stats.diff_sq ** 0.5 / max(ref_norm, 1e-30)
        worst = (max(worst[0], stats.max_abs), max(worst[1], stats.max_rel),
                 max(worst[2], norm_err))
        if norm_err > tol.rel_norm or stats.over:
            return fail(
                f"output {i}: relative norm error {norm_err:.3g} (limit {tol.rel_norm:g}, "
                f"{tol.precision_class}); {stats.over} of {out.numel()} elements outside "
                f"atol={tol.atol_rms:g}*rms+rtol={tol.rtol:g}*|ref|",
                stats.max_abs, stats.max_rel, norm_err,
            )
    return TrialError(trial, seed, worst[0], worst[1], worst[2], True, "")


def rel_norm_distance(outputs: list, reference: list) -> float:
    """||out - ref|| / ||ref|| over all outputs (inf when shapes differ)."""
    num = den = 0.0
    for out, ref in zip(outputs, reference):
        if tuple(out.shape) != tuple(ref.shape):
            return float("inf")
        stats = diff_stats(out, ref, 0.0, 0.0)
        num += stats.diff_sq
        den += stats.ref_sq
    return (num ** 0.5) / max(den ** 0.5, 1e-30)


def reference_norm(ref) -> float:
    import torch

    return sum(float(torch.linalg.vector_norm(r.double())) ** 2 for r in _chunks(ref)) ** 0.5


def diff_stats(out, ref, abs_bound: float, rtol: float) -> DiffStats:
    if _fusable(out, ref):
        return fused_diff_stats(out, ref, abs_bound, rtol)
    return torch_diff_stats(out, ref, abs_bound, rtol)


CHUNK = 1 << 25  # elements per torch pass: float64 temporaries stay at a few hundred MB


def _chunks(t):
    flat = t.reshape(-1)
    return [flat[i:i + CHUNK] for i in range(0, flat.numel(), CHUNK)] or [flat]


def torch_diff_stats(out, ref, abs_bound: float, rtol: float) -> DiffStats:
    import torch

    s = DiffStats()
    for o, r in zip(_chunks(out), _chunks(ref)):
        if not o.numel():
            continue
        if o.is_floating_point():
            s.nonfinite += int((~torch.isfinite(o)).sum())
        o, r = o.double(), r.double()
        diff = (o - r).abs()
        s.max_abs = max(s.max_abs, float(diff.max()))
        s.max_rel = max(s.max_rel, float((diff / r.abs().clamp_min(1e-12)).max()))
        s.over += int((diff > abs_bound + rtol * r.abs()).sum())
        finite = torch.nan_to_num(diff, nan=NONFINITE_DIFF, posinf=NONFINITE_DIFF)
        s.diff_sq += float(torch.linalg.vector_norm(finite)) ** 2
        s.ref_sq += float(torch.linalg.vector_norm(r)) ** 2
    return s


def _fusable(out, ref) -> bool:
    return (out.is_cuda and ref.is_cuda and out.is_floating_point() and ref.is_floating_point()
            and out.is_contiguous() and ref.is_contiguous() and out.numel() == ref.numel()
            and out.numel() > 0)


def fused_diff_stats(out, ref, abs_bound: float, rtol: float) -> DiffStats:
    """`torch_diff_stats` in one read of each tensor (also runs on the Triton interpreter)."""
    from search_engine.evaluation.device_reductions import diff_partials

    sums, maxes = diff_partials(out, ref, abs_bound, rtol)
    return DiffStats(nonfinite=int(sums[0]), diff_sq=sums[1], ref_sq=sums[2],
                     max_abs=maxes[0], max_rel=maxes[1], over=int(sums[3]))
