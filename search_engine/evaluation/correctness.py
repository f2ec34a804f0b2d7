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
        if out.is_floating_point() and not torch.isfinite(out).all():
            bad = int((~torch.isfinite(out)).sum())
            return fail(f"output {i}: {bad} NaN/Inf values")
        o, r = out.double(), ref.double()
        diff = (o - r).abs()
        abs_err = float(diff.max()) if diff.numel() else 0.0
        rel_err = float((diff / r.abs().clamp_min(1e-12)).max()) if diff.numel() else 0.0
        ref_norm = float(torch.linalg.vector_norm(r))
        norm_err = float(torch.linalg.vector_norm(o - r)) / max(ref_norm, 1e-30)
        rms = ref_norm / max(r.numel(), 1) ** 0.5
        allowed = tol.atol_rms * rms + tol.rtol * r.abs()
        elementwise_ok = bool((diff <= allowed).all())
        worst = (max(worst[0], abs_err), max(worst[1], rel_err), max(worst[2], norm_err))
        if norm_err > tol.rel_norm or not elementwise_ok:
            over = int((diff > allowed).sum())
            return fail(
                f"output {i}: relative norm error {norm_err:.3g} (limit {tol.rel_norm:g}, "
                f"{tol.precision_class}); {over} of {diff.numel()} elements outside "
                f"atol={tol.atol_rms:g}*rms+rtol={tol.rtol:g}*|ref|",
                abs_err, rel_err, norm_err,
            )
    return TrialError(trial, seed, worst[0], worst[1], worst[2], True, "")


def rel_norm_distance(outputs: list, reference: list) -> float:
    """||out - ref|| / ||ref|| over all outputs (inf when shapes differ)."""
    import torch

    num = den = 0.0
    for out, ref in zip(outputs, reference):
        if tuple(out.shape) != tuple(ref.shape):
            return float("inf")
        d = torch.nan_to_num(out.double() - ref.double(), nan=1e30, posinf=1e30, neginf=1e30)
        num += float(torch.linalg.vector_norm(d)) ** 2
        den += float(torch.linalg.vector_norm(ref.double())) ** 2
    return (num ** 0.5) / max(den ** 0.5, 1e-30)
