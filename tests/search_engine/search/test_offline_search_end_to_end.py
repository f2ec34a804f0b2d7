"""The real thing on the CPU: offline synthesizer + sandboxed evaluator (Triton interpreter).

For a softmax, an RMS norm and a linear+GELU problem, a budget-12 search ends with a correct
best kernel that launches its own Triton kernels; MCTS and evolution both run.
"""

import ast

import pytest

from search_engine.search import SearchConfig, SearchRunner
from search_engine.synthesis.offline import OfflineSynthesizer

from .conftest import problem_source

FORBIDDEN_CALLS = {"softmax", "log_softmax", "linear", "matmul", "mm", "bmm", "gelu",
                   "layer_norm", "sqrt", "mean", "rsqrt"}


def torch_compute_calls(source: str) -> set[str]:
    """Calls of torch/F functions doing math in the candidate (there must be none)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            base = node.func.value
            if isinstance(base, ast.Name) and base.id in ("torch", "F") and \
                    node.func.attr in FORBIDDEN_CALLS:
                found.add(node.func.attr)
    return found


@pytest.mark.slow
@pytest.mark.parametrize("problem,strategy", [
    ("softmax", "mcts"), ("rmsnorm", "evolution"), ("linear_gelu", "mcts"),
])
def test_budget_12_search_finds_a_verified_kernel(problem, strategy, local_executor):
    events = []
    runner = SearchRunner(problem_source(problem), "interpreter", OfflineSynthesizer(),
                          local_executor, SearchConfig(strategy=strategy, budget=12, seed=0),
                          on_event=events.append, session=problem)
    outcome = runner.run()

    assert outcome.status == "completed", outcome.reason
    assert outcome.evaluated == 12
    best = outcome.best
    assert best is not None and best["status"] == "correct"
    result = best["result"]
    assert result["integrity_flags"] == []
    assert result["diagnostics"]["own_kernels"], "the best kernel launched no Triton kernel"
    assert result["coverage"] >= 0.3
    assert "@triton.jit" in best["source"] and "class ModelNew" in best["source"]
    assert torch_compute_calls(best["source"]) == set()
    # every evaluated node is a real, distinct candidate with credit
    evaluated = [n for n in outcome.nodes if n["result"] is not None]
    assert len({n["source"] for n in evaluated}) == 12
    assert all(n["advantage"] is not None for n in evaluated)
    failed = [(n["id"], n["status"], (n["result"] or {}).get("message", "")[:400])
              for n in evaluated if n["status"] != "correct"]
    assert len(evaluated) - len(failed) >= 10, failed
    # the tree grew below the root (refinements, not only root templates)
    assert max(n["depth"] for n in outcome.nodes) >= 2
    if strategy == "evolution":
        assert {n["origin"].get("island") for n in evaluated} == {0, 1}
    assert outcome.baselines.get("eager_ms") is not None
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
