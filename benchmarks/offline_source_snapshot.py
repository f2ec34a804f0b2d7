"""`python -m benchmarks.offline_source_snapshot OUT_DIR`: the offline synthesizer's generated
source for every problem we keep (the suite, the KernelBench-like folders, the offline variant
problems), written to OUT_DIR, one file per problem.

Each file holds the problem's family (or its refusal), the default kernel for each target
(interpreter, h200), the kernel with batch travel (`checked_render`) for the interpreter, the
children of every move from the interpreter default, and the resource verdict of each. Two
snapshots taken before and after a refactor of `search_engine/synthesis/offline/` must be
byte-identical (`diff -r BEFORE AFTER`): the proof that moving code changed no kernel.

Only code generation runs (problems are traced on the meta device, in this process: our own
trusted problems); no kernel is compiled or launched, so it is cheap on a CPU.
"""

from __future__ import annotations

import argparse
import importlib
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGETS = ("interpreter", "h200")
VARIANT_AREAS = ("conv", "rows", "matmul", "structure")
KERNELBENCH_FOLDERS = ("level1", "level2", "level3", "official_forms")


def problems() -> list[tuple[str, str]]:
    """(name, source) of every problem, in a fixed order."""
    out = []
    for path in sorted((REPO / "benchmarks" / "suite").glob("*.py")):
        if path.name != "__init__.py":
            out.append((f"suite/{path.stem}", path.read_text()))
    for folder in KERNELBENCH_FOLDERS:
        for path in sorted((REPO / "benchmarks" / "kernelbench_like" / folder).glob("*.py")):
            out.append((f"kernelbench_like/{folder}/{path.stem}", path.read_text()))
    for area in VARIANT_AREAS:
        cases = importlib.import_module(f"benchmarks.offline_variants.{area}").CASES
        out.extend((f"offline_variants/{area}/{name}", cases[name]) for name in sorted(cases))
    return out


def snapshot(source: str) -> str:
    """Everything the synthesizer writes for one problem, as one text."""
    from search_engine.hardware import get_target
    from search_engine.problem_probe import _batch_analyses
    from search_engine.synthesis.base import NotCoveredError
    from search_engine.synthesis.offline.plan.classify import analysis_from_json
    from search_engine.synthesis.offline.frontend.json_io import analysis_to_json
    from search_engine.synthesis.offline.frontend.trace import trace_module
    from search_engine.synthesis.offline.synthesizer import (
        checked_render, family_module, planned,
    )

    sys.path.insert(0, str(REPO / "tests" / "search_engine" / "synthesis"))
    from conftest import load_problem

    try:
        module = load_problem(source)
        an = analysis_from_json(analysis_to_json(trace_module(module)))
        variants = {v["batch"]: analysis_from_json(v["analysis"])
                    for v in _batch_analyses(module, an)}
        an.batch_variants = variants
        an = planned(an)
    except NotCoveredError as refused:
        return f"not covered: {refused}\nops: {list(refused.ops)}\n"
    except Exception as exc:  # a trace failure is part of the record, never a crash
        return f"analysis error: {type(exc).__name__}: {exc}\n"
    family = family_module(an)
    parts = [f"family: {an.family}\n"]
    for target in TARGETS:
        params = family.default_params(an, target, "strict")
        parts.append(_section(f"default {target} {sorted(params.items())}",
                              lambda: family.render(source, an, params)))
        parts.append(f"resources {target}: "
                     f"{family.resource_problem(an, params, get_target(target))!r}\n")
    base = family.default_params(an, "interpreter", "strict")
    parts.append(_section("traveling interpreter", lambda: checked_render(source, an, base)))
    moves = family.ordered_moves(an, "unknown", "strict", random.Random(0), base)
    for move in sorted(moves):
        child = family.apply_move(an, base, move)
        if child is not None:
            parts.append(_section(f"move {move} {sorted(child.items())}",
                                  lambda: family.render(source, an, child)))
    return "".join(parts)


def _section(title: str, render) -> str:
    try:
        text = render()
    except Exception as exc:  # noqa: BLE001 - a writer's failure is recorded as it reads
        text = f"render error: {type(exc).__name__}: {exc}\n"
    return f"==== {title}\n{text}\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.offline_source_snapshot")
    parser.add_argument("out", help="folder to write the snapshot into")
    args = parser.parse_args(argv)
    out = Path(args.out)
    for name, source in problems():
        path = out / f"{name}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            text = snapshot(source)
        except Exception as exc:  # noqa: BLE001 - recorded without line numbers, which move
            text = f"snapshot error: {type(exc).__name__}: {exc}\n"
        path.write_text(text)
    print(f"wrote {len(problems())} problems to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
