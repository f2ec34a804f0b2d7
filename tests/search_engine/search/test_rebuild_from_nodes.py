"""A session's state can be rebuilt from its stored nodes and the search goes on."""

import json

import pytest

from search_engine.search import SearchConfig, SearchRunner, SearchTree
from search_engine.synthesis.offline import OfflineSynthesizer

from .conftest import problem_source


def stored_nodes(events):
    """What the web app keeps: the latest payload of every node, as JSON rows."""
    rows = {}
    for e in events:
        if e["type"] in ("node_created", "node_evaluated"):
            rows[e["payload"]["id"]] = json.loads(json.dumps(e["payload"]))
    return [rows[i] for i in sorted(rows)]


@pytest.mark.parametrize("strategy", ["mcts", "evolution"])
def test_rebuild_continues_the_same_session(strategy, scripted_executor):
    events = []
    first = SearchRunner(problem_source("rmsnorm"), "h200", OfflineSynthesizer(),
                         scripted_executor, SearchConfig(strategy=strategy, budget=6, seed=5),
                         on_event=events.append).run()
    rows = stored_nodes(events)
    assert len(rows) == len(first.nodes)

    more = []
    runner = SearchRunner.from_nodes(rows, problem_source("rmsnorm"), "h200",
                                     OfflineSynthesizer(), scripted_executor,
                                     SearchConfig(strategy=strategy, budget=12, seed=5),
                                     next_seq=events[-1]["seq"] + 1, on_event=more.append)
    assert runner.evaluated == 6
    assert runner.tree.best().id == first.best["id"]
    outcome = runner.run()
    assert outcome.evaluated == 12
    assert more[0]["seq"] == events[-1]["seq"] + 1
    old = {n["id"]: n for n in first.nodes}
    for node in outcome.nodes:  # stored nodes are kept as they were
        if node["id"] in old:
            assert node["source"] == old[node["id"]]["source"]
            assert node["status"] == old[node["id"]]["status"]
    sources = [n["source"] for n in outcome.nodes if n["id"]]
    assert len(sources) == len(set(sources))  # no candidate evaluated twice


def test_pending_nodes_are_evaluated_again(scripted_executor):
    events = []
    SearchRunner(problem_source("softmax"), "h200", OfflineSynthesizer(), scripted_executor,
                 SearchConfig(budget=4, seed=1), on_event=events.append).run()
    rows = stored_nodes(events)
    crashed = rows[-1]
    crashed.update(status="pending", result=None, reward=None, advantage=None)
    runner = SearchRunner.from_nodes(rows, problem_source("softmax"), "h200",
                                     OfflineSynthesizer(), scripted_executor,
                                     SearchConfig(budget=4, seed=1))
    assert runner.evaluated == 3
    outcome = runner.run()
    assert outcome.evaluated == 4
    assert next(n for n in outcome.nodes if n["id"] == crashed["id"])["result"] is not None
    assert scripted_executor.requests[-1].candidate_source == crashed["source"]


def test_rebuild_rejects_rows_without_a_root():
    with pytest.raises(ValueError, match="root"):
        SearchTree.from_dicts([{"id": 3, "parent_id": 1, "source": ""}])
