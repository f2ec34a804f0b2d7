"""The search engine's command line: `python -m search_engine <command>`.

One tree: this module builds the parser from every command's `register_*(subparsers)`:
`evaluate` (here), `optimize` and `suite` (`search/cli_commands.py`), `coverage`
(`synthesis/offline/coverage.py`). The flags they share live in `cli_args.py`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from search_engine.cli_args import add_isolation_argument, parse_sizes, with_isolation
from search_engine.search.cli_commands import register_optimize, register_suite
from search_engine.synthesis.offline.coverage import register_coverage

__all__ = ["build_parser", "main", "add_isolation_argument", "parse_sizes", "with_isolation"]


def register_evaluate(subparsers) -> None:
    p = subparsers.add_parser(
        "evaluate", help="evaluate one candidate kernel against a KernelBench problem",
        description="Run a candidate (Python defining ModelNew with Triton kernels) in a sandbox: "
                    "correctness against a float64 reference, timing, diagnostics, integrity "
                    "checks and reward.")
    p.add_argument("--problem", required=True, help="KernelBench problem file (Model, get_inputs, "
                   "get_init_inputs)")
    p.add_argument("--candidate", required=True, help="candidate file defining ModelNew")
    p.add_argument("--target", default="auto", help="h200 | interpreter | auto (default) | any "
                   "name in search_engine.hardware.TARGETS")
    p.add_argument("--timeout", type=float, default=180.0, help="seconds for the sandboxed run "
                   "(default 180)")
    p.add_argument("--precision", default="strict", choices=["strict", "tf32", "bf16"],
                   help="precision policy (sets the tolerance; default strict)")
    p.add_argument("--size", action="append", default=[], metavar="NAME=VALUE",
                   help="override a module-level size of the problem (repeatable)")
    p.add_argument("--trials", type=int, default=5, help="correctness trials (at least 5 "
                   "recommended)")
    p.add_argument("--no-ncu", action="store_true", help="skip Nsight Compute metrics")
    add_isolation_argument(p)
    p.add_argument("--json", action="store_true", help="print the result as one JSON object on "
                   "the last line")
    p.set_defaults(func=cmd_evaluate)


def cmd_evaluate(args) -> int:
    from dataclasses import replace

    from search_engine.evaluation.config import EvaluationConfig
    from search_engine.evaluation.isolation import IsolationUnavailable
    from search_engine.evaluation.pipeline import evaluate
    from search_engine.problems import Problem, ProblemError

    try:
        problem = Problem.from_file(args.problem).with_sizes(**parse_sizes(args.size))
        candidate_path = Path(args.candidate)
        try:
            candidate = candidate_path.read_text()
        except OSError as exc:
            raise ValueError(f"cannot read candidate file {candidate_path}: "
                             f"{exc.strerror or exc}") from exc
        config = EvaluationConfig(trials=args.trials)
        if args.no_ncu:
            config = replace(config, ncu="off")
        config = with_isolation(config, args)
        result = evaluate(problem, candidate, target=args.target, precision_policy=args.precision,
                          timeout_s=args.timeout, config=config)
    except (ProblemError, ValueError, IsolationUnavailable) as exc:
        return _print_error(args, str(exc))
    except Exception as exc:  # noqa: BLE001 - whatever happened, the caller gets a status
        return _print_error(args, f"the evaluation failed: {type(exc).__name__}: {exc}")
    if args.json:
        print(json.dumps(result.to_dict(), default=str))
    else:
        from search_engine.evaluation.summary import format_summary

        print(format_summary(result))
    return 0


def _print_error(args, message: str) -> int:
    if args.json:
        print(json.dumps({"status": "error", "message": message}))
    else:
        print(f"error: {message}", file=sys.stderr)
    return 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m search_engine",
                                     description="KernelHub search engine")
    subparsers = parser.add_subparsers(dest="command", metavar="command")
    for register in (register_evaluate, register_optimize, register_suite, register_coverage):
        register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return int(args.func(args) or 0)
