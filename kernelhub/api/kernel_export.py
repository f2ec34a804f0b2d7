"""An approved kernel as a self-contained Python module, and as a ZIP with its check script.

ZIP layout (one folder, so unzipping never scatters files)::

    kernelhub-kernel-<review id>/
        kernel.py       ModelNew, with a header: problem, hardware, speedups, approval, version
        reference.py    the problem (Model, get_inputs, get_init_inputs)
        check.py        re-verifies correctness against a float64 reference and times vs eager
        metrics.json    the numbers the approval was made on, and the check's tolerance
        README.md
"""

from __future__ import annotations

import io
import json
import pprint
import zipfile
from pathlib import Path

from django.utils import timezone

import kernelhub
from kernelhub.optimization.selectors import problem_family
from kernelhub.optimization.shapes import candidate_shapes, shape_text
from kernelhub.review.models import Review
from search_engine.evaluation.tolerances import precision_class, tolerance_for

CHECK_SCRIPT = Path(__file__).resolve().parent / "bundle" / "check.py"


def _fmt(value, suffix="", digits=3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}{suffix}"


def kernel_metrics(review: Review) -> dict:
    candidate = review.candidate
    session = candidate.session
    problem = session.problem
    timing = candidate.timing or {}
    policy = session.precision_policy
    tolerance = tolerance_for(policy, problem.dtype)
    shapes = candidate_shapes(candidate)
    return {
        "kernel_id": review.pk,
        "candidate_id": candidate.pk,
        "session_id": session.pk,
        "team": review.team.name,
        "problem": problem.name,
        "family": problem_family(problem),
        "problem_sha256": problem.source_sha256,
        "dtype": problem.dtype,
        "hardware": review.hardware.name,
        "hardware_name": review.hardware.display_name,
        "precision_policy": policy,
        "status": candidate.status,
        "speedup_vs_eager": candidate.speedup_vs_eager,
        "speedup_vs_compile": candidate.speedup_vs_compile,
        "coverage": candidate.coverage,
        "reward": candidate.reward,
        "timing": timing,
        "bottleneck": (candidate.diagnostics or {}).get("bottleneck"),
        "integrity_flags": candidate.integrity_flags,
        "integrity_override": review.integrity_override,
        "override_reason": review.override_reason,
        "approved_by": review.reviewer.get_username() if review.reviewer else None,
        "approved_at": review.decided_at.isoformat() if review.decided_at else None,
        "comment": review.comment,
        "metrics_at_approval": review.metrics,
        "tolerance": {"class": precision_class(policy, problem.dtype), "rtol": tolerance.rtol,
                      "atol_rms": tolerance.atol_rms, "rel_norm": tolerance.rel_norm},
        # where it was verified and timed, and whether it is drop-in at other shapes
        **{k: shapes[k] for k in ("verified_shapes", "timed_shapes", "shape_specific",
                                  "drop_in")},
        "kernelhub_version": kernelhub.__version__,
        "exported_at": timezone.now().isoformat(),
    }


def _shapes(entries) -> str:
    return "; ".join(shape_text(e) for e in entries) or "not recorded"


def _median(timing: dict, which: str):
    entry = timing.get(which) or {}
    return entry.get("median_ms") if isinstance(entry, dict) else None


def module_source(review: Review, metrics: dict | None = None) -> str:
    metrics = metrics or kernel_metrics(review)
    timing = metrics["timing"]
    method = (timing.get("candidate") or {}).get("method", "") if isinstance(timing, dict) else ""
    header = [
        "# KernelHub approved kernel — self-contained module (defines ModelNew).",
        f"# problem:   {metrics['problem']} (family: {metrics['family'] or 'n/a'}, dtype: "
        f"{metrics['dtype']}, sha256 {metrics['problem_sha256'][:16]}…)",
        f"# hardware:  {metrics['hardware_name']} ({metrics['hardware']}), precision policy "
        f"{metrics['precision_policy']}",
        f"# speedup:   {_fmt(metrics['speedup_vs_eager'], 'x', 2)} vs eager PyTorch, "
        f"{_fmt(metrics['speedup_vs_compile'], 'x', 2)} vs torch.compile",
        f"# timings:   kernel {_fmt(_median(timing, 'candidate'), ' ms', 4)}, eager "
        f"{_fmt(_median(timing, 'eager'), ' ms', 4)}, compile "
        f"{_fmt(_median(timing, 'compile'), ' ms', 4)}" + (f" ({method})" if method else ""),
        f"# coverage:  {_fmt(metrics['coverage'], '', 3)} of device time in custom kernels",
        f"# shapes:    verified at {_shapes(metrics['verified_shapes'])}; timed at "
        f"{_shapes(metrics['timed_shapes'])}",
        f"# drop-in:   {metrics['drop_in']}",
        f"# approved:  by {metrics['approved_by'] or 'n/a'} at {metrics['approved_at'] or 'n/a'}"
        + (f" — {metrics['comment'].splitlines()[0][:120]}" if metrics["comment"] else ""),
    ]
    if metrics["integrity_override"]:
        header.append(f"# integrity: flags overridden by the reviewer: "
                      f"{metrics['override_reason'][:160]}")
    header += [
        f"# source:    KernelHub {metrics['kernelhub_version']}, kernel #{metrics['kernel_id']}, "
        f"session #{metrics['session_id']}, candidate #{metrics['candidate_id']}",
        "",
    ]
    source = review.candidate.source.rstrip() + "\n"
    summary = {k: metrics[k] for k in (
        "kernel_id", "problem", "hardware", "precision_policy", "speedup_vs_eager",
        "speedup_vs_compile", "coverage", "verified_shapes", "timed_shapes", "shape_specific",
        "approved_by", "approved_at", "kernelhub_version")}
    footer = ["", "", "# Recorded by KernelHub at export time.",
              "KERNELHUB_METADATA = " + pprint.pformat(summary, sort_dicts=False, width=96), ""]
    return "\n".join(header) + source + "\n".join(footer)


def module_filename(review: Review) -> str:
    problem = review.candidate.session.problem.name
    safe = "".join(c if c.isalnum() else "_" for c in problem).strip("_").lower() or "kernel"
    return f"{safe}_{review.hardware.name}_kernel_{review.pk}.py"


def bundle_bytes(review: Review) -> bytes:
    metrics = kernel_metrics(review)
    folder = f"kernelhub-kernel-{review.pk}/"
    readme = (
        f"# KernelHub kernel #{review.pk}: {metrics['problem']} on {metrics['hardware']}\n\n"
        "- `kernel.py`: the approved `ModelNew`, for the problem's `Model`.\n"
        f"- Shapes: verified at {_shapes(metrics['verified_shapes'])}; timed at "
        f"{_shapes(metrics['timed_shapes'])}. {metrics['drop_in']}\n"
        "- `reference.py`: the problem it was verified against.\n"
        "- `check.py`: `python check.py` re-verifies correctness (float64 reference, "
        f"tolerance class {metrics['tolerance']['class']}) and times it against eager "
        "PyTorch; without a GPU the Triton interpreter runs it.\n"
        "- `metrics.json`: the measurements and the approval.\n"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(folder + "kernel.py", module_source(review, metrics))
        archive.writestr(folder + "reference.py", review.candidate.session.problem.source)
        archive.writestr(folder + "check.py", CHECK_SCRIPT.read_text())
        archive.writestr(folder + "metrics.json", json.dumps(metrics, indent=2, default=str))
        archive.writestr(folder + "README.md", readme)
    return buffer.getvalue()
