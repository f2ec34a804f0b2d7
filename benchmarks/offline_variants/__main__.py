"""`python -m benchmarks.offline_variants [AREA ...] [--dir DIR] [--draws N] [--json-out F]`: the
offline synthesizer on ~600 KernelBench-like variant problems of our own (conv and pooling,
row-wise ops and losses, matmuls and attention, elementwise ops and model structure), each
traced, rendered with default and random parameters and checked against its reference on
the Triton interpreter (see harness.py); with ``--dir``, every problem file of a folder instead
(e.g. benchmarks/kernelbench_like/level1). Prints one line per problem and a summary per area.
With ``--travel``, each module is run at a second batch size instead (travel.py).
Run with TRITON_INTERPRET=1."""

from __future__ import annotations

import argparse
import collections
import importlib
import json
import tempfile
import time
from pathlib import Path

from .harness import check
from .travel import check_travel

AREAS = ("conv", "rows", "matmul", "structure")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.offline_variants")
    parser.add_argument("areas", nargs="*", metavar="AREA",
                        help=f"some of {', '.join(AREAS)} (default: all)")
    parser.add_argument("--dir", action="append", default=[],
                        help="check the problem files of this folder (repeatable) instead")
    parser.add_argument("--draws", type=int, default=1, help="random parameter draws per problem")
    parser.add_argument("--json-out", help="write every problem's outcome here")
    parser.add_argument("--travel", action="store_true",
                        help="instead: run each module at a second batch size (travel.py)")
    args = parser.parse_args(argv)
    unknown = [a for a in args.areas if a not in AREAS]
    if unknown:
        parser.error(f"unknown area {unknown[0]!r}: choose from {', '.join(AREAS)}")
    missing = [d for d in args.dir if not Path(d).is_dir()]
    if missing:
        parser.error(f"--dir {missing[0]}: not a folder")
    rows, started = [], time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for area, cases in _sources(args):
            for name, source in cases.items():
                outcome, family, detail = check_travel(source, Path(tmp)) if args.travel \
                    else check(source, Path(tmp), args.draws)
                rows.append({"area": area, "problem": name, "outcome": outcome,
                             "family": family, "detail": detail})
                print(f"{area}/{name}: {outcome} [{family}] {detail[:200]}", flush=True)
    print(travel_summary(rows) if args.travel else summary(rows, time.time() - started))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=1))
    return 0


def _sources(args):
    """(area, {name: source}) for the chosen areas, or for each --dir folder."""
    if args.dir:
        for folder in map(Path, args.dir):
            yield folder.name, {p.stem: p.read_text() for p in sorted(folder.glob("*.py"))
                                if p.name != "__init__.py"}
        return
    for area in args.areas or AREAS:
        yield area, importlib.import_module(f"benchmarks.offline_variants.{area}").CASES


def summary(rows: list[dict], seconds: float) -> str:
    lines = [f"{'area':<10} {'problems':>8} {'ok':>5} {'not covered':>11} {'wrong/error':>11}"]
    by_area = collections.defaultdict(list)
    for row in rows:
        by_area[row["area"]].append(row["outcome"])
    for area, outcomes in [*by_area.items(), ("all", [r["outcome"] for r in rows])]:
        ok, refused = outcomes.count("ok"), outcomes.count("not_covered")
        lines.append(f"{area:<10} {len(outcomes):>8} {ok:>5} {refused:>11} "
                     f"{len(outcomes) - ok - refused:>11}")
    lines.append(f"{seconds:.0f} s")
    return "\n".join(lines)


def travel_summary(rows: list[dict]) -> str:
    counts = collections.Counter(row["outcome"] for row in rows)
    return "travel: " + ", ".join(f"{k} {v}" for k, v in counts.most_common())


if __name__ == "__main__":
    raise SystemExit(main())
