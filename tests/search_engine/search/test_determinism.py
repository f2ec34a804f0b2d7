"""Same seed → the same tree, even though evaluations finish in a random order."""

import pytest

from search_engine.search import SearchConfig, SearchRunner
from search_engine.synthesis.offline import OfflineSynthesizer

from .conftest import ScriptedExecutor, problem_source


def shape(outcome):
    return [(n["id"], n["parent_id"], n["origin"].get("transformation"),
             n["origin"].get("params"), n["origin"].get("memory_mode"), n["status"])
            for n in outcome.nodes]


def run(problem, strategy, seed, max_delay=0.03):
    executor = ScriptedExecutor(max_delay=max_delay)
    try:
        config = SearchConfig(strategy=strategy, budget=16, seed=seed, children_per_step=2,
                              max_in_flight=4)
        return SearchRunner(problem_source(problem), "h200", OfflineSynthesizer(), executor,
                            config).run()
    finally:
        executor.shutdown()


@pytest.mark.parametrize("problem,strategy", [("softmax", "mcts"),
                                              ("linear_gelu", "evolution")])
def test_same_seed_same_tree(problem, strategy):
    first, second = run(problem, strategy, 7), run(problem, strategy, 7)
    assert first.evaluated == second.evaluated == 16
    assert shape(first) == shape(second)
    assert [n["source"] for n in first.nodes] == [n["source"] for n in second.nodes]


def test_another_seed_gives_another_tree():
    assert shape(run("softmax", "mcts", 1)) != shape(run("softmax", "mcts", 2))
