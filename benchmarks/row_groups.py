"""Which staged problems get row groups (`plan/stages.row_groups`), and what they save: for
each KernelBench-like problem of the staged family, the kernels its default render launches
with row groups and without them, and how many times the grouped stages read their rows from
memory: once a stage apart, once a group in one tile (a streamed group's re-reads are its
own, from L2). Counted from the plan and the rendered source at the problems' own (small)
sizes; the H200 numbers come from the suite runner.

    python -m benchmarks.row_groups [DIR ...]   (default: kernelbench_like levels 1-3)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DIRS = [REPO / "benchmarks" / "kernelbench_like" / d for d in ("level1", "level2", "level3")]


def launches(candidate: str) -> int:
    return len(re.findall(r"^\s+kh_stage\w+\[", candidate, re.M))


def render(source: str, grouped: bool):
    """(analysis, candidate, groups) at the interpreter's defaults; None when not staged."""
    from search_engine.synthesis.base import NotCoveredError
    from search_engine.synthesis.offline.plan import stages
    from search_engine.synthesis.offline.spaces import staged

    from conftest import traced_analysis  # the tests' in-process tracer (our own problems)

    saved = stages.ROW_GROUP_TILE, stages.ROW_GROUP_STREAMED
    if not grouped:
        stages.ROW_GROUP_TILE, stages.ROW_GROUP_STREAMED = 0, 0
    try:
        an = traced_analysis(source)
        if an.family not in staged.FAMILIES:
            return None
        candidate = staged.render(source, an, staged.default_params(an, "interpreter", "strict"))
        return an, candidate, stages.row_groups(an, stages.plan(an))
    except NotCoveredError:
        return None
    finally:
        stages.ROW_GROUP_TILE, stages.ROW_GROUP_STREAMED = saved


def main(argv: list[str]) -> None:
    from search_engine.synthesis.offline.plan import stages

    sys.path.insert(0, str(REPO / "tests" / "search_engine" / "synthesis"))  # its conftest
    dirs = [Path(a) for a in argv] or DIRS
    rows, staged_count = [], 0
    for path in sorted(p for d in dirs for p in d.glob("*.py")):
        source = path.read_text()
        with_groups = render(source, True)
        if with_groups is None:
            continue
        staged_count += 1
        an, candidate, groups = with_groups
        if not groups:
            continue
        _, separate, _ = render(source, False)
        members = sum(len(g) for g in groups)
        plan = stages.plan(an)
        reads = sum(len(g) if stages.streams_rows(an, plan[g[0]]) else 1 for g in groups)
        rows.append((path.parent.name + "/" + path.name, launches(separate), launches(candidate),
                     members, reads))
    print(f"{staged_count} staged problems, {len(rows)} with row groups")
    print("| problem | kernels before | kernels after | stages in groups | reads of their rows "
          "from memory |")
    print("|---|---|---|---|---|")
    for name, before, after, members, reads in rows:
        print(f"| {name} | {before} | {after} | {members} | {members} -> {reads} |")


if __name__ == "__main__":
    main(sys.argv[1:])
