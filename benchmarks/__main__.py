"""`python -m benchmarks`: the GPU suite against eager and torch.compile (`make bench`).

  python -m benchmarks list [--scale tiny]
  python -m benchmarks run [--families F ...] [--problems P ...] [--budget N]
                           [--out benchmarks/results/h200-DATE.json]
  python -m benchmarks merge A.json B.json ... --out ALL.json
  python -m benchmarks report FILE [--plot FILE.png]
  python -m benchmarks baselines --out FILE.json [--policy strict] [--files F.py ...]
      eager and torch.compile with PyTorch's defaults (the evaluator's old baselines) and at
      the policy's precision (the new ones), side by side with their errors

Each family fits one 10-minute GPU call (`--time-limit`, default 500 s, is shared among its
problems); rows of several runs merge into one file by problem name. Only torch, triton
and numpy are needed on the GPU machine; matplotlib only for `report`'s plot.
Exit codes: 0 done, 2 bad arguments or files (the message says which).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks.suite import SCALES, SUITE_DIR, SuiteError
from search_engine.evaluation.tolerances import POLICIES

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", metavar="command")
    listing = commands.add_parser("list", help="the suite's problems by family")
    _suite_arguments(listing)
    listing.set_defaults(func=cmd_list)

    run = commands.add_parser("run", help="time eager, torch.compile and the search's best "
                                          "kernel for some or all problems")
    _suite_arguments(run)
    run.add_argument("--families", nargs="+", default=[], metavar="FAMILY",
                     help="families to run (space or comma separated; default: all)")
    run.add_argument("--problems", nargs="+", default=[], metavar="NAME",
                     help="problems to run by name, besides --families")
    run.add_argument("--budget", type=int, default=6, help="evaluations per search (default 6)")
    run.add_argument("--parallel", type=int, default=2,
                     help="evaluations in flight per search (default 2: official shapes hold "
                          "GBs per sandbox)")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--precision", default="strict", choices=POLICIES,
                     help="the search's precision policy (default strict: the problem's own)")
    run.add_argument("--strategy", default="mcts", choices=["mcts", "evolution"])
    run.add_argument("--target", default="auto",
                     help="hardware target of the search (default auto: this machine)")
    run.add_argument("--compile-mode", default="max-autotune-no-cudagraphs",
                     help="torch.compile mode of the baseline (inductor only)")
    run.add_argument("--compile-backend", default="inductor",
                     help="torch.compile backend of the baseline (default inductor; `eager` "
                          "only to test the runner quickly)")
    run.add_argument("--time-limit", type=float, default=500.0, metavar="SECONDS",
                     help="wall clock for the whole run, shared among its problems "
                          "(default 500: one 10-minute GPU call with start-up and slack)")
    run.add_argument("--search-seconds", type=float, default=240.0, metavar="SECONDS",
                     help="most seconds one search may take (default 240)")
    run.add_argument("--no-ncu", action="store_true", help="skip Nsight Compute in the search")
    run.add_argument("--isolation", default="auto", choices=["auto", "required", "off"],
                     help="the search's sandbox isolation (default auto)")
    run.add_argument("--search-times-compile", action="store_true",
                     help="let the search's sandboxes time torch.compile too (off: the runner "
                          "times it once)")
    run.add_argument("--out", type=Path, default=None,
                     help="results JSON, merged into when it exists (default "
                          "benchmarks/results/<gpu>-<date>.json)")
    run.set_defaults(func=cmd_run)

    merge = commands.add_parser("merge", help="merge results files by problem name")
    merge.add_argument("files", nargs="+", type=Path)
    merge.add_argument("--out", type=Path, required=True)
    merge.set_defaults(func=cmd_merge)

    report = commands.add_parser("report", help="print the markdown table and write the plot")
    report.add_argument("file", type=Path)
    report.add_argument("--plot", type=Path, default=None,
                        help="PNG path (default: next to FILE, .png)")
    report.add_argument("--no-plot", action="store_true")
    report.set_defaults(func=cmd_report)
    return parser


def _suite_arguments(p) -> None:
    p.add_argument("--scale", default="official", choices=SCALES,
                   help="official KernelBench shapes (default) or tiny ones for CPU tests")
    p.add_argument("--suite-dir", type=Path, default=SUITE_DIR, help=argparse.SUPPRESS)


def _names(values: list[str]) -> list[str]:
    return [name for value in values for name in value.split(",") if name]


def cmd_list(args) -> int:
    from benchmarks.suite import families, load_suite

    problems = load_suite(args.scale, args.suite_dir)
    by_name = {p.name: p for p in problems}
    for family, names in families(problems).items():
        print(f"{family}:")
        for name in names:
            p = by_name[name]
            print(f"  {name:<42} {p.dtype:<9} {p.min_bytes / 1e9:8.3f} GB "
                  f"{p.min_flops / 1e12:8.3f} TFLOP")
    return 0


def cmd_run(args) -> int:
    from benchmarks import results
    from benchmarks.runner import RunOptions, device_name, run_suite
    from benchmarks.suite import load_suite, select

    for flag, value in (("--budget", args.budget), ("--parallel", args.parallel)):
        if value < 1:
            raise SuiteError(f"{flag} must be at least 1, got {value}")
    for flag, value in (("--time-limit", args.time_limit),
                        ("--search-seconds", args.search_seconds)):
        if value <= 0:
            raise SuiteError(f"{flag} must be positive, got {value:g}")
    problems = select(load_suite(args.scale, args.suite_dir), _names(args.families),
                      _names(args.problems))
    options = RunOptions(
        families=_names(args.families), problems=_names(args.problems), budget=args.budget,
        parallel=args.parallel, seed=args.seed, precision=args.precision,
        strategy=args.strategy, target=args.target, scale=args.scale,
        compile_mode=args.compile_mode, compile_backend=args.compile_backend,
        time_limit_s=args.time_limit, search_seconds=args.search_seconds, no_ncu=args.no_ncu,
        isolation=args.isolation, search_times_compile=args.search_times_compile)
    out = args.out
    if out is None:
        import time

        out = results.default_out(results.machine_name(device_name()),
                                  time.strftime("%Y-%m-%d", time.gmtime()), args.scale,
                                  RESULTS_DIR)
    if out.exists():
        results.load(out)  # a file we would merge into must be ours, before hours are spent
    document = run_suite(problems, options, out,
                         log=lambda line: print(line, file=sys.stderr, flush=True))
    print(results.markdown(document))
    print(f"results written to {out}", file=sys.stderr)
    return 0


def cmd_merge(args) -> int:
    import json

    from benchmarks import results

    document = results.merge([results.load(path) for path in args.files])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=1, default=str))
    print(f"{len(document['problems'])} problems from {len(args.files)} files written to "
          f"{args.out}")
    return 0


def cmd_report(args) -> int:
    from benchmarks import results

    document = results.load(args.file)
    print(results.markdown(document))
    if not args.no_plot:
        print(results.plot(document, args.plot or args.file.with_suffix(".png")),
              file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    from benchmarks.results import ResultsError

    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["baselines"]:
        from benchmarks.baseline_precision import main as baselines_main

        return baselines_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except (SuiteError, ResultsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
