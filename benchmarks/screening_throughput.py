"""Screening throughput (issue 29): configurations spot-checked and timed per minute, by lanes.

    python3 benchmarks/screening_throughput.py [--problems l1_023_softmax_fp32,...]
        [--files a.py,b.py] [--configs 64] [--lanes 8,12] [--target h200] [--seed 0]
        [--out FILE]

For each problem of the suite (benchmarks/suite/, KernelBench's official shapes) the offline
synthesizer draws `--configs` distinct configurations the way a fresh search expansion does
(the target's default, then random draws of the family's space, none the target cannot
hold). Each `--lanes` value gets its own executor (warm sandboxes, shared reference): one
configuration first, off the clock (the reference, the baselines and the pool's starts),
then the whole family as one screening, as `optimize --screen N` runs it. Every lane's
sandbox compiles into its own Triton cache, so no run reuses another's kernels.

Prints and writes one JSON row per problem and lane count: configurations screened, passed,
the screening's seconds, configurations per minute, seconds per phase summed over lanes
(compile, check: Triton's JIT and the spot-check, timing, gpu_wait: queued behind other
lanes' timing), and the fastest screened time. Needs a GPU (or `--target interpreter` with
TRITON_INTERPRET=1 and a small problem, as the tests run it) and a sandbox (bubblewrap).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from search_engine.evaluation.config import EvaluationConfig  # noqa: E402
from search_engine.evaluation.executor import LocalExecutor  # noqa: E402
from search_engine.hardware import get_target  # noqa: E402
from search_engine.protocols import ScreenRequest  # noqa: E402

DEFAULT_PROBLEMS = "l1_023_softmax_fp32,l1_001_matmul_fp32,l1_conv2d_3x3_fp32"


def configurations(problem_source: str, count: int, target: str, policy: str,
                   seed: int) -> list[dict]:
    """Up to `count` distinct renderings ({params, source}): the offline synthesizer's
    proposals for a fresh expansion of the root (the default, then random draws), without
    any the target cannot hold."""
    from search_engine.synthesis.base import MemoryView, NodeView, SynthesisRequest
    from search_engine.synthesis.offline import OfflineSynthesizer

    root = NodeView(id=0, source=problem_source, origin={}, status="reference")
    request = SynthesisRequest(problem_source=problem_source, target=get_target(target),
                               parent=root, memory=MemoryView("trajectory"),
                               precision_policy=policy)
    proposals = OfflineSynthesizer().propose(request, count, random.Random(seed))
    return [{"params": p.params, "source": p.source} for p in proposals if not p.pruned]


def measure(problem_source: str, sources: list[str], lanes: int, target: str, policy: str,
            timeout_s: float) -> dict:
    """One screening of `sources` over `lanes` warm sandboxes, after a warm-up screening."""
    config = replace(EvaluationConfig(), screen_lanes=lanes)
    with LocalExecutor(max_workers=2, config=config) as executor:
        def screened(batch: list[str]):
            request = ScreenRequest(problem_source=problem_source, sources=batch, target=target,
                                    precision_policy=policy, timeout_s=timeout_s)
            return executor.screen(request).result()

        started = time.monotonic()
        screened(sources[:1])  # the reference and the warm pool, off the clock
        warm_up_s = time.monotonic() - started
        _progress(f"{lanes} lanes: warm-up {warm_up_s:.1f} s; screening {len(sources)}")
        result = screened(sources)
    ranked = result.ranked()
    return {"lanes": lanes, "configs": len(sources), "sandboxes": result.sandboxes,
            "passed": len(ranked), "seconds": result.duration_s,
            "per_minute": round(60.0 * len(sources) / max(result.duration_s, 1e-9), 1),
            "phases": result.phases, "warm_up_s": round(warm_up_s, 1),
            "fastest_ms": ranked[0].median_ms if ranked else None,
            "failures": [{"index": c.index, "reason": c.reason[:160]}
                         for c in result.configurations if not c.passed][:5]}


def _progress(line: str) -> None:
    """Where a run cut by its time limit was (stderr; the rows go to stdout)."""
    print(line, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="screening_throughput.py")
    parser.add_argument("--problems", default=DEFAULT_PROBLEMS,
                        help="suite problem names (benchmarks/suite/NAME.py), comma-separated")
    parser.add_argument("--files", default="",
                        help="problem files instead of suite names, comma-separated")
    parser.add_argument("--configs", type=int, default=64)
    parser.add_argument("--lanes", default="8", help="lane counts to compare, e.g. 8,12")
    parser.add_argument("--target", default="h200")
    parser.add_argument("--policy", default="strict")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout-s", type=float, default=60.0, help="per configuration")
    parser.add_argument("--out", help="write the rows here as JSON")
    args = parser.parse_args(argv)
    try:
        lanes = [int(n) for n in args.lanes.split(",") if n.strip()]
    except ValueError:
        parser.error(f"--lanes {args.lanes!r}: give whole numbers, e.g. 8,12")
    if not lanes or min(lanes) < 1 or args.configs < 1:
        parser.error("--lanes and --configs need at least 1")
    rows = []
    paths = [Path(f.strip()) for f in args.files.split(",") if f.strip()] or [
        ROOT / "benchmarks" / "suite" / f"{p.strip()}.py" for p in args.problems.split(",")
        if p.strip()]
    for path in paths:
        if not path.is_file():
            parser.error(f"no problem file {path}")
        name = path.stem
        source = path.read_text()
        begun = time.monotonic()
        drawn = configurations(source, args.configs, args.target, args.policy, args.seed)
        _progress(f"{name}: {len(drawn)} configurations drawn in "
                  f"{time.monotonic() - begun:.1f} s")
        for count in lanes:
            row = {"problem": name, "target": args.target, "policy": args.policy,
                   **measure(source, [c["source"] for c in drawn], count, args.target,
                             args.policy, args.timeout_s)}
            for failure in row["failures"]:  # which configuration: a pruning gap shows
                failure["params"] = drawn[failure["index"]]["params"]
            rows.append(row)
            print(json.dumps(row), flush=True)
            if args.out:  # after each row: a call cut short keeps what it measured
                Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
