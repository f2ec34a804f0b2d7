"""The suite's results file: rows, merging several runs by problem name, geometric means,
the markdown table and the plot for BENCHMARKS.md.

A results document::

    {"machine": "NVIDIA H200", "date": "...Z", "torch": "2.11.0", "triton": "3.6.0",
     "ceilings": {"copy_gbs": ..., "matmul_tflops": {"float32": ..., ...}, ...},
     "scale": "official", "timing": "...", "runs": [one entry per `run` call],
     "problems": [one row per problem, fields in ROW_FIELDS first],
     "geomeans": {"strict": {"covered": n, "with_kernel": k, "speedup_vs_eager": g, ...}}}

Top-level machine, date, versions and ceilings are the latest run's; every run keeps its own
in `runs`, and each row names the run that measured it (`measured_at`).
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import time
from pathlib import Path

ROW_FIELDS = ("name", "family", "dtype", "covered", "eager_ms", "compile_ms", "best_ms",
              "speedup_vs_eager", "speedup_vs_compile", "floor_ms", "pct_of_floor",
              "evaluations", "search_seconds", "best_status", "precision", "compile_seconds",
              "best_depth", "noise")
TOP_FIELDS = ("machine", "date", "torch", "triton", "ceilings")
SKIPPED = "skipped"
# Precision classes of search_engine.evaluation.tolerances -> the ceilings' matmul keys.
MATMUL_KEY = {"fp32": "float32", "tf32": "tf32", "fp16": "float16", "bf16": "bfloat16"}


class ResultsError(ValueError):
    """A results file cannot be read or merged; the message says which and why."""


# -- a run and its rows ------------------------------------------------------------------------

def new_run(settings: dict, device: str, ceilings: dict, problem_names: list[str],
            command: str) -> dict:
    import torch
    import triton

    from benchmarks.timing import timing_method

    return {"machine": machine_name(device), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                    time.gmtime()),
            "torch": torch.__version__, "triton": triton.__version__, "device": device,
            "ceilings": ceilings, "timing": timing_method(device), "scale": settings["scale"],
            "settings": settings, "problems": problem_names, "command": command}


def machine_name(device: str) -> str:
    if device == "cuda":
        import torch

        return torch.cuda.get_device_name(0)
    return f"cpu ({platform.machine()}, {os.cpu_count()} cores)"


def default_out(machine: str, date: str, scale: str, folder: Path) -> Path:
    """benchmarks/results/h200-2026-12-01.json (the GPU's short name; `-tiny` for tiny)."""
    words = machine.lower().replace("nvidia", "").split()
    slug = next((w for w in words if any(c.isdigit() for c in w)), words[0] if words else "cpu")
    slug = "cpu" if machine.startswith("cpu") else "".join(c for c in slug if c.isalnum())
    return folder / f"{slug}-{date[:10]}{'-tiny' if scale == 'tiny' else ''}.json"


def floor_ms(min_bytes: int, min_flops: int, dtype: str, precision: str,
             ceilings: dict) -> float | None:
    """The least time this machine allows: bytes at copy bandwidth or FLOPs at the fastest
    matmul rate the precision accepts (`compute_peak`)."""
    return _floor(min_bytes, min_flops, dtype, precision, ceilings)[0]


def _floor(min_bytes: int, min_flops: int, dtype: str, precision: str,
           ceilings: dict) -> tuple[float | None, str]:
    """(floor ms or None without a copy rate, what bounds it: "memory" or the matmul
    arithmetic whose rate does)."""
    from search_engine.evaluation.tolerances import precision_class

    bandwidth = ceilings.get("copy_gbs") or 0
    peak, arithmetic = compute_peak(precision_class(precision, dtype), ceilings)
    memory_s = min_bytes / (bandwidth * 1e9) if bandwidth else 0.0
    compute_s = min_flops / (peak * 1e12) if min_flops and peak else 0.0
    bound = arithmetic if compute_s > memory_s else "memory"
    if not bandwidth:
        return None, bound
    return _round(max(memory_s, compute_s) * 1e3), bound


def compute_peak(klass: str, ceilings: dict) -> tuple[float | None, str]:
    """(TFLOP/s, arithmetic) of the fastest measured matmul rate a precision class accepts:
    strict fp32 also runs as three tf32 tensor-core products (tf32x3, a third of the measured
    tf32 rate), which is what its GEMMs and convolutions are measured against; the SIMT fp32
    rate alone would call a tensor-core kernel near its floor when it is at a third of it."""
    rates = ceilings.get("matmul_tflops") or {}
    kinds = {MATMUL_KEY[klass]: rates.get(MATMUL_KEY[klass])}
    if klass == "fp32" and rates.get("tf32"):
        kinds["tf32x3"] = rates["tf32"] / 3
    known = {k: v for k, v in kinds.items() if v}
    if not known:
        return None, ""
    best = max(known, key=known.get)
    return known[best], best


def problem_row(problem, precision: str, found: dict, measured: dict, run: dict) -> dict:
    """One problem's row: the contract's fields first, then what explains them."""
    best = found.get("best") or {}
    eager, compiled = measured.get("eager_ms"), measured.get("compile_ms")
    best_ms = measured.get("best_ms")
    floor, bound = _floor(problem.min_bytes, problem.min_flops, problem.dtype, precision,
                          run["ceilings"])
    return {
        "name": problem.name, "family": problem.family, "dtype": problem.dtype,
        "covered": found["covered"], "eager_ms": _round(eager), "compile_ms": _round(compiled),
        "best_ms": _round(best_ms), "speedup_vs_eager": _ratio(eager, best_ms),
        "speedup_vs_compile": _ratio(compiled, best_ms), "floor_ms": floor,
        "pct_of_floor": _percent(floor, best_ms),
        "floor_arithmetic": bound,
        "evaluations": found.get("evaluations", 0),
        "search_seconds": found.get("seconds"), "best_status": best_status(found, measured),
        "precision": precision, "compile_seconds": measured.get("compile_seconds"),
        "best_depth": best.get("depth"),
        "noise": _noise(eager, measured.get("eager_ms_repeat")),
        "eager_ms_repeat": _round(measured.get("eager_ms_repeat")),
        "precision_method": (best.get("params") or {}).get("PRECISION"),
        "rel_norm_error": measured.get("rel_norm_error"),
        **{f"{base}_{what}": measured.get(f"{base}_{what}") for base in ("eager", "compile")
           for what in ("rel_error", "within_tolerance", "missed")},
        "search_status": found.get("status"), "search_reason": found.get("reason", ""),
        "search_speedup_vs_eager": best.get("speedup_vs_eager"),
        "best_node_id": best.get("node_id"), "best_transformation": best.get("transformation"),
        "min_bytes": problem.min_bytes, "min_flops": problem.min_flops,
        "search_failures": found.get("failures", []), "error": measured.get("error"),
        "compile_error": measured.get("compile_error"),
        "reverify_error": measured.get("reverify_error"), "measured_at": run["date"],
        "best_source": best.get("source"),
    }


def skipped_row(problem, precision: str, reason: str, run: dict) -> dict:
    row = dict.fromkeys(ROW_FIELDS)
    row.update(name=problem.name, family=problem.family, dtype=problem.dtype,
               precision=precision, evaluations=0, best_status=SKIPPED, search_reason=reason,
               measured_at=run["date"])
    return row


def best_status(found: dict, measured: dict) -> str:
    if not found["covered"]:
        return "not_covered"
    if found.get("status") == "search_error":
        return "search_error"
    if measured.get("error"):
        return "measure_error"
    if not found.get("best"):
        return "no_kernel"
    if not measured.get("verified"):
        return "failed_reverification"
    return found["best"].get("status") or "correct"


def row_line(row: dict) -> str:
    return (f"{row['name']:<40} {row['best_status']:<22} eager {_fmt(row['eager_ms'])} ms  "
            f"compile {_fmt(row['compile_ms'])} ms  best {_fmt(row['best_ms'])} ms  "
            f"x{_fmt(row['speedup_vs_compile'])} vs compile")


# -- documents: write, load, merge -------------------------------------------------------------

def write_rows(out: Path, run: dict, rows: list[dict]) -> dict:
    """Merge `rows` (measured by `run`) into the file at `out` (created when missing)."""
    fresh = {"scale": run["scale"], "runs": [run], "problems": rows}
    documents = [load(out), fresh] if out.exists() else [fresh]
    document = merge(documents)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    partial.write_text(json.dumps(document, indent=1, default=str))
    partial.replace(out)  # a run cut short never leaves half a file
    return document


def load(path: Path) -> dict:
    try:
        document = json.loads(Path(path).read_text())
    except OSError as exc:
        raise ResultsError(f"cannot read {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path} is not JSON: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("problems"), list) \
            or not document.get("runs"):
        raise ResultsError(f"{path} is not a benchmarks results file (no runs / problems)")
    return document


def merge(documents: list[dict]) -> dict:
    """One document from several, rows by problem name: a later row replaces an earlier one,
    except that a skipped row never replaces a measured one."""
    runs = sorted({r["date"] + r.get("command", ""): r for d in documents
                   for r in d["runs"]}.values(), key=lambda r: r["date"])
    _check_comparable(runs)
    rows: dict[str, dict] = {}
    for document in documents:
        for row in document["problems"]:
            earlier = rows.get(row["name"])
            if earlier is None or row["best_status"] != SKIPPED \
                    or earlier["best_status"] == SKIPPED:
                rows[row["name"]] = row
    latest = runs[-1]
    merged = {key: latest[key] for key in TOP_FIELDS}
    merged.update(timing=latest["timing"], scale=latest["scale"], runs=runs,
                  problems=[rows[name] for name in sorted(rows)])
    merged["geomeans"] = geomeans(merged["problems"])
    return merged


def _check_comparable(runs: list[dict]) -> None:
    for key in ("machine", "scale"):
        values = sorted({r[key] for r in runs})
        if len(values) > 1:
            raise ResultsError(f"cannot merge runs of different {key}s ({', '.join(values)}): "
                               "their times are not comparable")


def geomeans(rows: list[dict]) -> dict:
    """Per precision policy, over covered problems with a verified kernel and both baselines
    (speedups at different precisions are never mixed)."""
    out = {}
    for precision in sorted({r["precision"] for r in rows}):
        covered = [r for r in rows if r["precision"] == precision and r["covered"]]
        timed = [r for r in covered if r["speedup_vs_eager"] and r["speedup_vs_compile"]]
        vs_compile = [r["speedup_vs_compile"] for r in timed]
        out[precision] = {
            "covered": len(covered), "with_kernel": len(timed),
            "speedup_vs_eager": _geomean([r["speedup_vs_eager"] for r in timed]),
            "speedup_vs_compile": _geomean(vs_compile),
            "worst_vs_compile": min(vs_compile) if vs_compile else None,
            "deeper_than_first_child": sum(1 for r in timed if (r["best_depth"] or 0) > 1),
        }
    return out


# -- the report ----------------------------------------------------------------------------------

REPORT_COLUMNS = ("problem", "dtype", "family", "eager ms", "compile ms (s to compile)",
                  "best ms", "x eager", "x compile", "% of floor", "evals", "depth", "status")


def markdown(document: dict) -> str:
    """BENCHMARKS.md's table, geometric means, ceilings and noise for a results document."""
    lines = ["| " + " | ".join(REPORT_COLUMNS) + " |", "|" + "---|" * len(REPORT_COLUMNS)]
    for r in document["problems"]:
        compile_cell = f"{_fmt(r['compile_ms'])} ({_fmt(r['compile_seconds'], 1)})"
        cells = [r["name"], r["dtype"], r["family"], _fmt(r["eager_ms"]), compile_cell,
                 _fmt(r["best_ms"]), _fmt(r["speedup_vs_eager"], 2),
                 _fmt(r["speedup_vs_compile"], 2), _fmt(r["pct_of_floor"], 0),
                 str(r["evaluations"]), _fmt(r["best_depth"], 0), r["best_status"]]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines += inaccurate_baselines(document["problems"])
    for precision, g in document["geomeans"].items():
        lines.append(f"- **{precision}**: geometric mean over {g['with_kernel']} of "
                     f"{g['covered']} covered problems: {_fmt(g['speedup_vs_eager'], 2)}x eager, "
                     f"**{_fmt(g['speedup_vs_compile'], 2)}x torch.compile** (worst "
                     f"{_fmt(g['worst_vs_compile'], 2)}x); winner deeper than the first child "
                     f"in {g['deeper_than_first_child']}.")
    c = document["ceilings"]
    tflops = ", ".join(f"{k} {v}" for k, v in c["matmul_tflops"].items())
    lines.append(f"- Ceilings measured in the run on {document['machine']}: copy "
                 f"{c['copy_gbs']} GB/s, matmul TFLOP/s {tflops}. Timing: {document['timing']}. "
                 f"Floor: the bytes at copy bandwidth or the FLOPs at the fastest rate the "
                 f"precision accepts (strict fp32: tf32x3, a third of the tf32 rate).")
    for run in document["runs"]:
        lines.append(f"- Run {run['date']}: `{run['command']}` ({len(run['problems'])} problems)")
    noise = [r["noise"] for r in document["problems"] if r.get("noise") is not None]
    if noise:
        lines.append(f"- Noise (eager timed twice per problem): median "
                     f"{statistics.median(noise) * 100:.1f} %, max {max(noise) * 100:.1f} %.")
    return "\n".join(lines)


def inaccurate_baselines(rows: list[dict]) -> list[str]:
    """A note for each baseline whose own output misses the tolerance its problem's kernels
    are held to: its speedup compares a kernel with something less accurate."""
    notes = []
    for r in rows:
        for base in ("eager", "compile"):
            if r.get(f"{base}_within_tolerance") is False:
                where = f" on {r[f'{base}_missed']}" if r.get(f"{base}_missed") else ""
                notes.append(f"- {r['name']}: {base}'s own output misses the {r['precision']} "
                             f"tolerance{where} (worst relative error "
                             f"{r[f'{base}_rel_error']:.1e}): the speedup over it compares "
                             f"with a less accurate result.")
    return notes


PLOT_TICKS = (0.1, 0.2, 0.5, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0, 100.0)


def plot(document: dict, path: Path) -> str:
    """A bar chart of each covered problem's speedup over eager and torch.compile (log
    scale); returns what happened (matplotlib is optional)."""
    try:
        import matplotlib
    except ImportError:
        return "plot skipped: matplotlib is not installed"
    matplotlib.use("Agg")
    from matplotlib import pyplot

    rows = [r for r in document["problems"] if r["speedup_vs_compile"]]
    if not rows:
        return "plot skipped: no problem has a timed kernel"
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    figure, axes = pyplot.subplots(figsize=(9, 0.4 * len(rows) + 1.8))
    positions = range(len(rows))
    for offset, key, label in ((-0.2, "speedup_vs_compile", "x torch.compile"),
                               (0.2, "speedup_vs_eager", "x eager")):
        values = [r[key] or 1.0 for r in rows]
        # bars grow from 1.0 (parity) to the speedup: left of the line is slower
        axes.barh([p + offset for p in positions], [v - 1.0 for v in values], 0.4, left=1.0,
                  label=label)
    axes.axvline(1.0, color="black", linewidth=0.8)
    axes.set_xscale("log")
    shown = [r[k] for r in rows for k in ("speedup_vs_compile", "speedup_vs_eager") if r[k]]
    axes.set_xticks([t for t in PLOT_TICKS if min(shown) / 1.3 <= t <= max(shown) * 1.3])
    axes.xaxis.set_major_formatter(ScalarFormatter())
    axes.xaxis.set_minor_formatter(NullFormatter())
    axes.set_yticks(list(positions), [r["name"] for r in rows], fontsize=8)
    axes.invert_yaxis()
    axes.set_xlabel("speedup of the best kernel (log scale)")
    axes.set_title(f"{document['machine']}, {document['date'][:10]}")
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12 - 1.2 / (len(rows) + 4)), ncol=2)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    pyplot.close(figure)
    return f"plot written to {path}"


# -- small helpers -------------------------------------------------------------------------------

def _round(value):
    """Milliseconds to 5 significant digits (microsecond CPU times stay non-zero)."""
    return None if value is None else float(f"{value:.5g}")


def _ratio(numerator, denominator):
    """numerator / denominator to 4 significant digits; None when either is missing."""
    if not numerator or not denominator:
        return None
    return float(f"{numerator / denominator:.4g}")


def _percent(part, whole):
    ratio = _ratio(part, whole)
    return None if ratio is None else float(f"{100 * ratio:.4g}")


def _noise(first, second):
    """How far one baseline's second timing is from its first, as a fraction."""
    if not first or second is None:
        return None
    return round(abs(second - first) / first, 4)


def _geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    if not values:
        return None
    return round(math.exp(sum(math.log(v) for v in values) / len(values)), 3)


def _fmt(value, digits: int = 4) -> str:
    if value is None:
        return "-"
    if digits == 0:
        return f"{value:.0f}"
    return f"{value:.{digits}g}" if digits > 2 else f"{value:.{digits}f}"
