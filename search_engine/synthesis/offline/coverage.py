"""`python -m search_engine coverage DIR [--json]`: which problems the offline synthesizer
covers, without running a search.

Every ``*.py`` problem file under DIR (sorted) is classified by
`OfflineSynthesizer.check_covered`, which traces the problem inside the sandboxed probe on
meta tensors (so official sizes cost no memory); this process only reads the files' text.
Under each covered problem its kernel plan (`plan/kernel_plan.py`), one kernel a line. With
``--json`` the last line is one object: ``{"problems": [{"file", "covered", "family", "ops",
"message", "plan"}], "covered": N, "total": M}`` (``plan``: `KernelPlan.to_dict`).
"""

from __future__ import annotations

import ast
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any


def register_coverage(subparsers) -> None:
    p = subparsers.add_parser(
        "coverage", help="list which problems in a folder the offline synthesizer covers",
        description="Classify every KernelBench-format problem file under DIR into an "
                    "offline-synthesizer family, or name the ops that stop it. Problem code "
                    "runs only in the sandbox, on meta tensors.")
    p.add_argument("dir", metavar="DIR", help="folder of problem files (searched recursively)")
    p.add_argument("--json", action="store_true", help="print one JSON object on the last line")
    p.add_argument("--jobs", type=int, default=2, help="sandboxed probes at once (default 2)")
    p.set_defaults(func=cmd_coverage)


def problem_files(folder: Path) -> list[Path]:
    """The KernelBench-format files under `folder`: those defining a class `Model` (read with
    `ast`, never imported). A file that does not parse is listed, so its error shows."""
    return sorted(p for p in folder.rglob("*.py") if p.is_file() and _looks_like_problem(p))


def _looks_like_problem(path: Path) -> bool:
    try:
        tree = ast.parse(path.read_text())
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return True
    return any(isinstance(n, ast.ClassDef) and n.name == "Model" for n in tree.body)


def coverage_of(source: str, synthesizer) -> dict[str, Any]:
    """One problem's row: covered, its family, the ops that stop it, and its kernel plan."""
    from search_engine.synthesis.base import NotCoveredError
    from search_engine.synthesis.offline.plan.kernel_plan import refused_plan

    try:
        family = synthesizer.check_covered(source)
        plan = synthesizer.kernel_plan(source)
    except NotCoveredError as exc:
        return {"covered": False, "family": None, "ops": list(exc.ops), "message": str(exc),
                "plan": refused_plan(exc).to_dict()}
    return {"covered": True, "family": family, "ops": [], "message": "",
            "plan": plan.to_dict()}


def coverage_report(folder: Path, jobs: int = 2) -> dict[str, Any]:
    from search_engine.synthesis.offline import OfflineSynthesizer
    from search_engine.synthesis.offline.plan.kernel_plan import KernelPlan

    files = problem_files(folder)
    synthesizer = OfflineSynthesizer()

    def one(path: Path) -> dict[str, Any]:
        try:
            source = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            message = f"could not read the file: {exc}"
            return {"covered": False, "family": None, "ops": [], "message": message,
                    "plan": KernelPlan(None, reason=message).to_dict()}
        return coverage_of(source, synthesizer)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        rows = list(pool.map(one, files))
    problems = [{"file": str(path.relative_to(folder)), **row} for path, row in zip(files, rows)]
    return {"problems": problems, "covered": sum(p["covered"] for p in problems),
            "total": len(problems)}


def cmd_coverage(args) -> int:
    folder = Path(args.dir)
    if not folder.is_dir():
        print(f"error: {folder} is not a folder", file=sys.stderr)
        return 2
    from search_engine.synthesis.offline.plan.kernel_plan import plan_lines

    report = coverage_report(folder, args.jobs)
    for p in report["problems"]:
        status = f"covered  {p['family']:<15}" if p["covered"] else "-        not covered    "
        why = "" if p["covered"] else f"  ops: {', '.join(p['ops']) or p['message']}"
        print(f"{status} {p['file']}{why}")
        if p["covered"]:
            for line in plan_lines(p["plan"]):
                print(f"    {line}")
    total, covered = report["total"], report["covered"]
    share = f"{100.0 * covered / total:.1f} %" if total else "n/a"
    print(f"covered {covered} of {total} problems ({share})")
    if args.json:
        print(json.dumps(report))
    return 0
