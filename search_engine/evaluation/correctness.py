"""Compare a candidate's outputs with the float64 reference (trusted parent side)."""

from __future__ import annotations

from search_engine.evaluation.result import TrialError
from search_engine.evaluation.tolerances import Tolerance


def compare_trial(trial: int, seed: int, outputs: list, reference: list, expected_dtypes: list[str],
                  tol: Tolerance) -> TrialError:
    import torch

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
        if out.is_floating_point():
            bad = sum(int((~torch.isfinite(c)).sum()) for c in _chunks(out))
            if bad:
                return fail(f"output {i}: {bad} NaN/Inf values")
        abs_err, rel_err, norm_err, over, count = _errors(out, ref, tol)
        worst = (max(worst[0], abs_err), max(worst[1], rel_err), max(worst[2], norm_err))
        if norm_err > tol.rel_norm or over:
            return fail(
                f"output {i}: relative norm error {norm_err:.3g} (limit {tol.rel_norm:g}, "
                f"{tol.precision_class}); {over} of {count} elements outside "
                f"atol={tol.atol_rms:g}*rms+rtol={tol.rtol:g}*|ref|",
                abs_err, rel_err, norm_err,
            )
    return TrialError(trial, seed, worst[0], worst[1], worst[2], True, "")


CHUNK = 1 << 25  # elements per pass: float64 temporaries stay at a few hundred MB


def _chunks(t):
    flat = t.reshape(-1)
    return [flat[i:i + CHUNK] for i in range(0, flat.numel(), CHUNK)] or [flat]


def _errors(out, ref, tol: Tolerance) -> tuple[float, float, float, int, int]:
    """(max abs error, max rel error, relative norm error, elements outside the elementwise
    bound, elements), in chunks so that outputs of many GB compare in bounded memory."""
    import torch

    ref_sq = sum(float(torch.linalg.vector_norm(r.double())) ** 2 for r in _chunks(ref))
    ref_norm = ref_sq ** 0.5
    rms = ref_norm / max(ref.numel(), 1) ** 0.5
    abs_err = rel_err = diff_sq = 0.0
    over = 0
    for o, r in zip(_chunks(out), _chunks(ref)):
        o, r = o.double(), r.double()
        diff = (o - r).abs()
        if not diff.numel():
            continue
        abs_err = max(abs_err, float(diff.max()))
        rel_err = max(rel_err, float((diff / r.abs().clamp_min(1e-12)).max()))
        diff_sq += float(torch.linalg.vector_norm(diff)) ** 2
        over += int((diff > tol.atol_rms * rms + tol.rtol * r.abs()).sum())
    return abs_err, rel_err, diff_sq ** 0.5 / max(ref_norm, 1e-30), over, out.numel()


def rel_norm_distance(outputs: list, reference: list) -> float:
    """||out - ref|| / ||ref|| over all outputs (inf when shapes differ)."""
    import torch

    num = den = 0.0
    for out, ref in zip(outputs, reference):
        if tuple(out.shape) != tuple(ref.shape):
            return float("inf")
        for o, r in zip(_chunks(out), _chunks(ref)):
            d = torch.nan_to_num(o.double() - r.double(), nan=1e30, posinf=1e30, neginf=1e30)
            num += float(torch.linalg.vector_norm(d)) ** 2
            den += float(torch.linalg.vector_norm(r.double())) ** 2
    return (num ** 0.5) / max(den ** 0.5, 1e-30)
