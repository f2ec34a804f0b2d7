"""Per-candidate cost of an evaluation on the interpreter: the clean softmax evaluated three
times in a row with one reference cache (the first pays for the reference).

    PYTHONPATH=$PWD python benchmarks/evaluator_overhead.py
"""

from __future__ import annotations

from pathlib import Path

from search_engine.evaluation.config import EvaluationConfig
from search_engine.evaluation.pipeline import evaluate
from search_engine.evaluation.reference import ReferenceCache
from search_engine.problems_library import library_problem

CANDIDATE = Path(__file__).parents[1] / "tests/search_engine/evaluation/candidates/clean_softmax.py"


def main() -> None:
    problem = library_problem("softmax", scale="small")
    cache = ReferenceCache()
    for i in range(3):
        r = evaluate(problem, CANDIDATE.read_text(), target="interpreter", timeout_s=300,
                     reference_cache=cache,
                     config=EvaluationConfig(trials=5, interpreter_reps=1, ncu="off"))
        phases = r.diagnostics["phases"]
        print(f"candidate {i + 1}: {r.status} in {r.duration_s:.1f} s "
              f"(sandbox {phases.get('sandbox_s')} s, correctness {phases.get('correctness')} s)")


if __name__ == "__main__":
    main()
