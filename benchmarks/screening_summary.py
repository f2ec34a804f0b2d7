"""A screening search's numbers from `optimize --out TREE --json` (issue 29's table).

    python3 benchmarks/screening_summary.py TREE.json OPTIMIZE_STDOUT.json [SEARCH.log]

Prints one JSON object: configurations screened and fully evaluated, elapsed seconds,
screened per minute of screening, the best's depth and its speedups, the first template's,
each screening's log line, and every screened configuration's parameters and time (the rows
a measured default table is built from), fastest first.
"""

from __future__ import annotations

import json
import re
import sys


def summary(tree: list[dict], outcome: dict, log_lines: list[str]) -> dict:
    evaluated = [n for n in tree if n.get("result") and n["status"] not in ("reference",)]
    correct = [n for n in evaluated if n["status"] == "correct"]
    best = max(correct, key=lambda n: n.get("reward") or 0.0, default=None)
    first = min(evaluated, key=lambda n: n["id"], default=None)
    screenings = [line.strip() for line in log_lines if "screened" in line]
    seconds = [float(m.group(1)) for line in screenings
               if (m := re.search(r" in ([0-9.]+) s on", line))]
    counts = [int(m.group(1)) for line in screenings
              if (m := re.search(r"screened (\d+) configurations", line))]
    return {
        "problem": outcome.get("problem"), "stop": outcome.get("stop_reason"),
        "elapsed_s": outcome.get("elapsed_s"), "screened": outcome.get("screened"),
        "evaluated": outcome.get("evaluated"),
        "screened_per_screening_minute": round(sum(counts) / (sum(seconds) / 60), 1)
        if seconds and sum(seconds) > 0 else None,
        "statuses": {s: sum(1 for n in evaluated if n["status"] == s)
                     for s in sorted({n["status"] for n in evaluated})},
        "first": _brief(first), "best": _brief(best),
        "best_over_first": round(best["speedup_vs_eager"] / first["speedup_vs_eager"], 3)
        if best and first and first.get("speedup_vs_eager") and best.get("speedup_vs_eager")
        else None,
        "baselines_ms": {k[:-3]: v for k, v in (outcome.get("baselines") or {}).items()
                         if k.endswith("_ms")},
        "screenings": screenings,
        "screened_table": screened_table(tree),
        "log": [line for line in log_lines if line.strip() and not line.startswith("[")][-40:],
    }


def screened_table(tree: list[dict]) -> list[dict]:
    """Each screened configuration (finalists too): its parent, move, parameters, screening
    time or why it failed, and the full evaluation's status where it had one."""
    rows = []
    for n in tree:
        origin = n.get("origin") or {}
        screen = origin.get("screen") or {}
        if not screen or screen.get("skipped"):
            continue
        rows.append({"id": n["id"], "parent_id": n.get("parent_id"),
                     "transformation": origin.get("transformation"),
                     "params": origin.get("params"), "screen_ms": screen.get("median_ms"),
                     "passed": screen.get("passed"),
                     "reason": None if screen.get("passed") else (screen.get("reason") or "")[:160],
                     "status": n.get("status")})
    return sorted(rows, key=lambda r: (r["screen_ms"] is None, r["screen_ms"] or 0.0))


def _brief(node: dict | None) -> dict | None:
    if node is None:
        return None
    origin = node.get("origin") or {}
    return {"id": node["id"], "depth": node.get("depth"), "status": node["status"],
            "transformation": origin.get("transformation"), "params": origin.get("params"),
            "speedup_vs_eager": node.get("speedup_vs_eager"),
            "speedup_vs_compile": node.get("speedup_vs_compile"),
            "screen_ms": (origin.get("screen") or {}).get("median_ms"),
            "message": ((node.get("result") or {}).get("message") or "")[:300]}


def main(argv: list[str]) -> int:
    try:
        tree = json.load(open(argv[1]))
    except (OSError, ValueError):  # the search died before writing it: the log says why
        tree = []
    lines = open(argv[2]).read().strip().splitlines()
    try:
        outcome = json.loads(lines[-1]) if lines else {}
    except ValueError:
        outcome = {}
    log = open(argv[3]).read().splitlines() if len(argv) > 3 else []
    print(json.dumps(summary(tree, outcome, log), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
