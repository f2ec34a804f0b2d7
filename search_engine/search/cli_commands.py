"""`python -m search_engine optimize` and `python -m search_engine suite`.

search_engine/cli.py builds its parser with `register_optimize(subparsers)` and
`register_suite(subparsers)`; each sets `func=handler(args) -> exit code`. This module holds
the arguments, the building blocks (synthesizer, executor, config) and the two commands; what
they print and write (progress bar, summaries, suite report) is in cli_output.py.

optimize --json prints one JSON object on its last stdout line::

    {"evaluated": 12, "status": "completed", "reason": "...", "problem": "softmax",
     "target": "interpreter", "strategy": "mcts", "synthesizer": "offline", "seed": 0,
     "best": {"node_id": 3, "status": "correct", "source": "...", "reward": 1.5,
              "speedup_vs_eager": 1.3, "speedup_vs_compile": 0.9, "speedup_label": "..."},
     "nodes": [{"id": 0, "parent": null, "status": "reference", "reward": null,
                "advantage": null, "transformation": "", "speedup_vs_eager": null}, ...],
     "baselines": {...}, "elapsed_s": 40.1, "cost_usd": 0.0,
     "usage": {"prompt_tokens": 0, "completion_tokens": 0, "requests": 0, ...}}

Nodes also carry "model" (which LLM wrote them) and "cost_usd".

Exit codes: 0 a verified kernel was found; 1 the search ended without one; 2 bad input;
3 the offline synthesizer does not cover the problem (the message names the ops).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from search_engine.cli_args import add_isolation_argument, parse_sizes, with_isolation
from search_engine.search.config import GPU_SCREEN
from search_engine.search.cli_output import (
    ProgressBar, outcome_json, print_suite_rows, print_summary, suite_report, suite_row,
)

# Also the output's names, which callers import from here.
__all__ = ["register_optimize", "register_suite", "make_synthesizer", "make_executor",
           "make_config", "optimize_problem", "cmd_optimize", "cmd_suite", "ProgressBar",
           "outcome_json"]


def _common_arguments(p) -> None:
    p.add_argument("--target", default="auto",
                   help="h200 | interpreter | auto (default) | a name in search_engine.hardware")
    p.add_argument("--strategy", default="mcts", choices=["mcts", "evolution"])
    p.add_argument("--synthesizer", default="offline", choices=["offline", "llm"])
    p.add_argument("--budget", type=int, default=12, help="evaluations (default 12)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--precision", default="strict", choices=["strict", "tf32", "bf16"])
    add_isolation_argument(p)
    p.add_argument("--parallel", type=int, default=2,
                   help="evaluations in flight and evaluation workers (default 2)")
    p.add_argument("--children", type=int, default=2, help="children proposed per step")
    p.add_argument("--timeout", type=float, default=180.0, help="seconds per evaluation")
    p.add_argument("--max-seconds", type=float, default=None, help="wall-clock limit")
    p.add_argument("--minutes", type=float, default=None,
                   help="wall-clock limit in minutes (with --max-seconds, the shorter wins)")
    p.add_argument("--screen", default="auto", metavar="N",
                   help="configurations screened per expansion of the offline synthesizer "
                        "(spot-check and a short timing in a warm sandbox), of which only the "
                        "fastest --finalists are fully evaluated; 0 = off; auto (default): "
                        f"off on the interpreter, {GPU_SCREEN} on a GPU")
    p.add_argument("--finalists", type=int, default=None,
                   help="screened configurations fully evaluated per expansion (default: "
                        "--children)")
    p.add_argument("--max-cost", type=float, default=None, help="LLM cost limit in USD")
    p.add_argument("--plateau", type=int, default=None,
                   help="stop after N evaluations without improvement")
    p.add_argument("--unordered", action="store_true",
                   help="apply results as they finish (faster, not reproducible)")
    p.add_argument("--size", action="append", default=[], metavar="NAME=VALUE",
                   help="override a module-level size of the problem (repeatable)")
    p.add_argument("--no-ncu", action="store_true", help="skip Nsight Compute metrics")
    p.add_argument("--llm-base-url", default=os.environ.get("OPENAI_BASE_URL"),
                   help="OpenAI-compatible endpoint (default $OPENAI_BASE_URL)")
    p.add_argument("--llm-model", default=None,
                   help="model(s), comma separated, each optionally MODEL@BASE_URL; several "
                        "are spread by a bandit on yield per cost (default $LLM_MODEL, "
                        "aliases $KERNELHUB_LLM_MODEL, $OPENAI_MODEL; else gpt-4o-mini)")
    p.add_argument("--llm-api-key-env", default="OPENAI_API_KEY",
                   help="environment variable holding the API key (never pass keys as flags)")
    p.add_argument("--llm-price", action="append", default=[], metavar="[MODEL=]IN:OUT",
                   help="USD per million prompt:completion tokens (repeatable; overrides the "
                        "known-model table and $KERNELHUB_LLM_PRICES)")
    p.add_argument("--llm-timeout", type=float,
                   default=float(os.environ.get("KERNELHUB_LLM_TIMEOUT_S") or 120.0),
                   help="seconds per LLM request (default 120)")
    p.add_argument("--llm-context-tokens", type=int,
                   default=int(os.environ.get("KERNELHUB_LLM_CONTEXT_TOKENS") or 32000),
                   help="the model's context window; prompts are summarised to fit")
    p.add_argument("--llm-max-answer-chars", type=int, default=60000,
                   help="longer answers become failed nodes")
    p.add_argument("--llm-retry", type=float, default=30.0,
                   help="seconds before retrying an endpoint that is down (doubles, max 300)")


def register_optimize(subparsers) -> None:
    p = subparsers.add_parser(
        "optimize", help="tree search for a fast, verified Triton kernel for a problem",
        description="Search a tree of candidate kernels (MCTS or evolution) written by the "
                    "offline template synthesizer or an LLM, each evaluated in a sandbox.")
    p.add_argument("--problem", required=True, help="KernelBench problem file")
    _common_arguments(p)
    p.add_argument("--out", default=None, help="write the whole tree (node dicts) as JSON here")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object on the last line")
    p.set_defaults(func=cmd_optimize)


def register_suite(subparsers) -> None:
    p = subparsers.add_parser(
        "suite", help="run optimize over every problem in a folder and write a JSON report")
    p.add_argument("dir", help="folder of KernelBench problem files (*.py)")
    _common_arguments(p)
    p.add_argument("--report", default="suite_report.json",
                   help="where to write the JSON report (default ./suite_report.json)")
    p.add_argument("--json", action="store_true", help="also print the report on the last line")
    p.set_defaults(func=cmd_suite)


# -- building blocks ------------------------------------------------------------------------

def make_synthesizer(args):
    if args.synthesizer == "offline":
        from search_engine.synthesis.offline import OfflineSynthesizer

        return OfflineSynthesizer()
    from search_engine.synthesis.endpoints import (
        make_llm_synthesizer, model_setting, parse_models, unpriced_models,
    )
    from search_engine.synthesis.pricing import parse_prices

    if not args.llm_base_url:
        raise ValueError("--synthesizer llm needs an endpoint: --llm-base-url or OPENAI_BASE_URL")
    models = parse_models(args.llm_model or model_setting(os.environ))
    prices = parse_prices(os.environ.get("KERNELHUB_LLM_PRICES"))
    for text in args.llm_price:
        prices.update(parse_prices(text))
    unpriced = unpriced_models(models, prices)
    if args.max_cost is not None and unpriced:
        raise ValueError(f"--max-cost needs a price for {', '.join(unpriced)}: pass "
                         "--llm-price MODEL=IN:OUT (USD per million tokens; 0:0 for free)")
    if unpriced:
        print(f"warning: no price known for {', '.join(unpriced)}; its cost counts as $0 "
              "(--llm-price MODEL=IN:OUT)", file=sys.stderr)
    return make_llm_synthesizer(
        args.llm_base_url, [f"{m}@{u}" if u else m for m, u in models],
        api_key=os.environ.get(args.llm_api_key_env, "none"), prices=prices,
        timeout_s=args.llm_timeout, context_tokens=args.llm_context_tokens,
        max_answer_chars=args.llm_max_answer_chars)


def make_executor(args):
    from search_engine.evaluation.config import EvaluationConfig
    from search_engine.evaluation.executor import LocalExecutor

    config = EvaluationConfig()
    if args.no_ncu:
        config = replace(config, ncu="off")
    config = with_isolation(config, args)
    return LocalExecutor(max_workers=max(1, args.parallel), config=config)


def screen_count(args) -> int:
    """--screen as a number; auto is `default_screen` for the target."""
    from search_engine.hardware import get_target
    from search_engine.search.config import default_screen

    value = str(getattr(args, "screen", "auto") or "auto")
    if value == "auto":
        return default_screen(get_target(args.target).is_interpreter)
    try:
        count = int(value)
    except ValueError:
        raise ValueError(f"--screen must be a number or auto, not {value!r}") from None
    if count < 0:
        raise ValueError("--screen must be 0 (off) or more")
    return count


def time_limit(args) -> float | None:
    """--max-seconds and --minutes: the shorter of those given."""
    limits = [v for v in (args.max_seconds, None if getattr(args, "minutes", None) is None
                          else args.minutes * 60.0) if v is not None]
    if any(v <= 0 for v in limits):
        raise ValueError("--max-seconds and --minutes must be positive")
    return min(limits) if limits else None


def make_config(args):
    from search_engine.search.loop import SearchConfig

    return SearchConfig(strategy=args.strategy, budget=args.budget, seed=args.seed,
                        children_per_step=args.children, max_in_flight=max(1, args.parallel),
                        ordered=not args.unordered, max_seconds=time_limit(args),
                        screen=screen_count(args),
                        screen_finalists=getattr(args, "finalists", None),
                        max_cost_usd=args.max_cost, plateau_window=args.plateau,
                        precision_policy=args.precision, eval_timeout_s=args.timeout,
                        outage_retry_s=getattr(args, "llm_retry", 30.0))


def optimize_problem(problem, args, executor, synthesizer, stream) -> dict[str, Any]:
    """Run one search; the JSON summary (with `not_covered` status when it cannot start)."""
    from search_engine.hardware import get_target
    from search_engine.search.loop import SearchRunner
    from search_engine.synthesis.base import NotCoveredError

    started = time.monotonic()  # --max-seconds counts the coverage check too
    target = get_target(args.target)
    args.target = target.name
    try:
        if hasattr(synthesizer, "check_covered"):
            synthesizer.check_covered(problem.source)
    except NotCoveredError as exc:
        return {"evaluated": 0, "status": "not_covered", "reason": str(exc), "ops": exc.ops,
                "problem": problem.name, "target": target.name, "strategy": args.strategy,
                "synthesizer": args.synthesizer, "seed": args.seed, "best": None, "nodes": []}
    bar = ProgressBar(args.budget, stream)
    config = replace(make_config(args), clock_started=started)
    runner = SearchRunner(problem.source, target, synthesizer, executor, config,
                          on_event=bar, session=problem.name)
    with _signals_cancel(runner):
        outcome = runner.run()
    bar.close()
    summary = outcome_json(outcome, problem.name, args)
    summary["_nodes_full"] = outcome.nodes
    return summary


@contextlib.contextmanager
def _signals_cancel(runner):
    """SIGINT and SIGTERM end the search like a cancel: evaluations in flight are killed
    and the best so far is printed; a second signal acts as usual. Only the main thread
    can take signals (a search run from another thread keeps the defaults)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}

    def stop(signum, _frame):
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        print(f"\n{signal.Signals(signum).name}: stopping the search, keeping the best so far",
              file=sys.stderr, flush=True)
        runner.cancel()

    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, stop)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def cmd_optimize(args) -> int:
    from search_engine.hardware import get_target
    from search_engine.problems import Problem, ProblemError

    stream = sys.stderr if args.json else sys.stdout
    try:
        problem = Problem.from_file(args.problem).with_sizes(**parse_sizes(args.size))
        if args.budget < 1:
            raise ValueError("--budget must be at least 1")
        args.target = get_target(args.target).name
        screen_count(args), time_limit(args)  # bad values: an error before anything runs
        synthesizer = make_synthesizer(args)
        executor = make_executor(args)
    except (ProblemError, ValueError) as exc:
        return _fail(args, str(exc), 2)
    try:
        summary = optimize_problem(problem, args, executor, synthesizer, stream)
    finally:
        executor.shutdown()
    nodes_full = summary.pop("_nodes_full", None)
    if args.out and nodes_full is not None:
        Path(args.out).write_text(json.dumps(nodes_full, indent=1, default=str))
    if summary["status"] == "not_covered":
        print(f"not covered: {summary['reason']}", file=sys.stderr)
    elif not args.json:
        print_summary(summary)
    if args.json:
        print(json.dumps(summary, default=str))
    if summary["status"] == "not_covered":
        return 3
    return 0 if summary["best"] is not None else 1


def _fail(args, message: str, code: int) -> int:
    if getattr(args, "json", False):
        print(json.dumps({"status": "error", "message": message, "evaluated": 0, "best": None,
                          "nodes": []}))
    else:
        print(f"error: {message}", file=sys.stderr)
    return code


def cmd_suite(args) -> int:
    from search_engine.problems import Problem, ProblemError

    folder = Path(args.dir)
    if not folder.is_dir():
        return _fail(args, f"{folder} is not a folder", 2)
    files = sorted(p for p in folder.glob("*.py") if not p.name.startswith("_"))
    if not files:
        return _fail(args, f"no problem files (*.py) in {folder}", 2)
    try:
        from search_engine.hardware import get_target

        sizes = parse_sizes(args.size)
        if args.budget < 1:
            raise ValueError("--budget must be at least 1")
        args.target = get_target(args.target).name
        screen_count(args), time_limit(args)  # bad values: an error before anything runs
        synthesizer = make_synthesizer(args)
        executor = make_executor(args)
    except ValueError as exc:
        return _fail(args, str(exc), 2)
    started, rows = time.time(), []
    stream = sys.stderr if args.json else sys.stdout
    try:
        for path in files:
            print(f"== {path.name}", file=stream)
            try:
                problem = Problem.from_file(path)
                known = {k: v for k, v in sizes.items() if k in problem.sizes}
                problem = problem.with_sizes(**known)
            except ProblemError as exc:
                rows.append({"problem": path.stem, "status": "invalid", "reason": str(exc)})
                continue
            summary = optimize_problem(problem, args, executor, synthesizer, stream)
            summary.pop("_nodes_full", None)
            rows.append(suite_row(path, summary))
    finally:
        executor.shutdown()
    report = suite_report(args, folder, rows, time.time() - started)
    Path(args.report).write_text(json.dumps(report, indent=1, default=str))
    print(f"report written to {args.report}", file=stream)
    print_suite_rows(rows, stream)
    if args.json:
        print(json.dumps(report, default=str))
    return 0
