"""What a reviewer decides on, read from a candidate: its code and diffs (against the
problem's reference and against its parent), trials, timings with their spread, the
roofline position and the integrity findings. Reads only."""

from __future__ import annotations

from kernelhub.optimization import code_render
from kernelhub.optimization.candidates import candidate_details
from kernelhub.optimization.models import Candidate

TIMING_ORDER = {"candidate": 0, "eager": 1, "compile": 2}


def timing_rows(timing: dict) -> list[dict]:
    """One row per timed program with its spread: IQR absolute and relative to the median."""
    rows = []
    for name, stats in sorted((timing or {}).items(), key=lambda kv: TIMING_ORDER.get(kv[0], 9)):
        stats = stats or {}
        median, iqr = stats.get("median_ms"), stats.get("iqr_ms")
        spread = 100.0 * iqr / median if median and iqr is not None else None
        rows.append({"name": name, **stats, "spread_percent": spread})
    return rows


def roofline_position(roofline: dict) -> dict | None:
    """Where the kernel sits under the roofline, in words and percentages of the peaks."""
    if not roofline or not roofline.get("available"):
        return None
    intensity, ridge = roofline.get("arithmetic_intensity"), roofline.get("ridge_point")
    side = None
    if intensity is not None and ridge:
        side = "memory-bound side" if intensity < ridge else "compute-bound side"

    def share(achieved, peak):
        return 100.0 * achieved / peak if achieved is not None and peak else None

    return {**roofline, "side": side,
            "bandwidth_percent": share(roofline.get("achieved_bandwidth_gbs"),
                                       roofline.get("peak_bandwidth_gbs")),
            "compute_percent": share(roofline.get("achieved_tflops"), roofline.get("peak_tflops"))}


def candidate_evidence(candidate: Candidate) -> dict:
    """The template context of the evidence partial (review page, comparison)."""
    session = candidate.session
    parent = candidate.parent
    name = f"candidate-{candidate.node_id}.py"
    details = candidate_details(candidate)
    diagnostics = candidate.diagnostics or {}
    return {
        "candidate": candidate, "parent": parent, "problem": session.problem,
        "is_interpreter": session.hardware.is_interpreter,
        "source_html": code_render.source_html(candidate.source),
        "reference_diff": code_render.code_diff(session.problem.source, candidate.source,
                                                "reference.py", name),
        "parent_diff": code_render.code_diff(parent.source, candidate.source,
                                             f"candidate-{parent.node_id}.py", name)
        if parent else None,
        "trials": details.get("correctness") or [],
        "timing_rows": timing_rows(candidate.timing),
        "roofline": roofline_position(diagnostics.get("roofline") or {}),
        "roofline_reason": (diagnostics.get("roofline") or {}).get("reason", ""),
        "bottleneck": diagnostics.get("bottleneck") or {},
        "integrity_flags": candidate.integrity_flags or [],
    }
