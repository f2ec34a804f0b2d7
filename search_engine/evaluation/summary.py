"""A readable summary of an EvaluationResult: what happened and why a kernel was rejected."""

from __future__ import annotations

from search_engine.evaluation.result import EvaluationResult

VERDICTS = {
    "correct": "ACCEPTED: correct",
    "incorrect": "REJECTED: wrong results",
    "compile_error": "REJECTED: does not compile or load",
    "runtime_error": "REJECTED: crashed while running",
    "timeout": "REJECTED: timed out",
    "hack_suspected": "REJECTED: integrity check failed (suspected hack)",
    "rejected_lazy": "REJECTED: lazy (torch does most of the work)",
    "problem_defect": "NOT SCORED: the problem itself is defective",
}


def _ms(value) -> str:
    return "-" if value is None else f"{value:.4f} ms"


def _baseline_note(t) -> str:
    """A baseline's precision and its own error against the float64 reference."""
    if not t.precision:
        return ""
    error = t.error or {}
    norm = error.get("rel_norm_error")
    within = {True: ", within", False: ", outside"}.get(error.get("within_tolerance"), "")
    return (f"  [{t.precision}" + (f"; rel-norm error {norm:.3g}{within} the candidate's "
                                     "tolerance" if norm is not None else "") + "]")


def format_summary(r: EvaluationResult) -> str:
    header = (f"{VERDICTS.get(r.status, r.status)}  [status={r.status}, target={r.target}, "
              f"precision={r.precision_policy}]")
    lines = [header, f"  why: {r.message}"]
    hacks = [f for f in r.integrity_flags if f.severity == "hack"]
    warnings = [f for f in r.integrity_flags if f.severity != "hack"]
    for title, flags in (("integrity flags", hacks), ("warnings", warnings)):
        if flags:
            lines.append(f"  {title}:")
            lines += [f"    - {f.check}: {f.evidence}" for f in flags]
    if r.correctness:
        lines.append("  correctness (per trial: max abs / max rel / rel-norm error):")
        for t in r.correctness:
            nums = ("-" if t.max_abs_error is None else
                    f"{t.max_abs_error:.3g} / {t.max_rel_error:.3g} / {t.rel_norm_error:.3g}")
            lines.append(f"    trial {t.trial} seed {t.seed}: {'ok  ' if t.passed else 'FAIL'} {nums}"
                         + (f"  ({t.note})" if t.note else ""))
    if r.timing:
        lines.append("  timing (median, IQR, samples, method):")
        for name, t in r.timing.items():
            lines.append(f"    {name:9s} {_ms(t.median_ms)}  iqr {_ms(t.iqr_ms)}  n={t.samples}  "
                         f"{t.method}" + _baseline_note(t))
    if r.speedup_vs_eager is not None or r.speedup_vs_compile is not None:
        lines.append(f"  speedup: {r.speedup_vs_eager or '-'}x vs eager, "
                     f"{r.speedup_vs_compile or '-'}x vs torch.compile")
    if r.speedup_label:
        lines.append(f"  note: {r.speedup_label}")
    if r.coverage is not None:
        lines.append(f"  coverage: {r.coverage:.0%} ({r.diagnostics.get('coverage_method', '')})")
    bottleneck = r.diagnostics.get("bottleneck") or {}
    if bottleneck.get("class") and bottleneck["class"] != "unknown":
        lines.append(f"  bottleneck: {bottleneck['class']}: {bottleneck.get('reason', '')}")
    for k in r.diagnostics.get("kernels", []):
        lines.append(f"  kernel {k['name']}: {k.get('n_regs')} regs, {k.get('n_spills')} spills, "
                     f"{k.get('shared_bytes')} B shared, {k.get('num_warps')} warps, occupancy "
                     f"~{k.get('occupancy', '-')} ({k.get('limited_by', '-')})")
    lines.append(f"  reward: {r.reward:g}   duration: {r.duration_s:.1f} s   network isolation: "
                 f"{r.isolation.get('network', '-')}")
    if r.status in ("compile_error", "runtime_error", "timeout") and r.logs:
        lines.append("  logs (tail):")
        lines += ["    " + line for line in r.logs.strip().splitlines()[-15:]]
    return "\n".join(lines)
