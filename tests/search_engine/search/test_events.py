"""Events: typed, JSON-serializable, in order, numbered; the node schema other helpers use."""

import json

from search_engine.search import SearchConfig, SearchRunner
from search_engine.search.events import EVENT_TYPES
from search_engine.synthesis.offline import OfflineSynthesizer

from .conftest import problem_source

NODE_KEYS = {"id", "parent_id", "depth", "source", "origin", "status", "reward", "advantage",
             "return", "speedup_vs_eager", "speedup_vs_compile", "coverage",
             "diagnostics_summary", "baselines", "result"}


def test_event_stream(scripted_executor):
    events = []
    SearchRunner(problem_source("softmax"), "h200", OfflineSynthesizer(), scripted_executor,
                 SearchConfig(budget=8, seed=3), on_event=events.append, session="s-42").run()
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert {e["type"] for e in events} <= set(EVENT_TYPES)
    assert all(e["session"] == "s-42" and isinstance(e["ts"], float) for e in events)
    json.loads(json.dumps(events))  # storable as-is
    assert events[0]["type"] == "status_changed" and events[0]["payload"]["status"] == "running"
    assert events[-1]["payload"]["status"] == "completed"

    created = [e["payload"] for e in events if e["type"] == "node_created"]
    assert created[0]["id"] == 0 and created[0]["status"] == "reference"
    assert all(set(p) == NODE_KEYS for p in created)
    origin = created[1]["origin"]
    assert {"synthesizer", "transformation", "params", "prompt", "memory_mode"} <= set(origin)

    evaluated = [e["payload"] for e in events if e["type"] == "node_evaluated"
                 and e["payload"]["id"] != 0]
    assert len(evaluated) == 8
    assert all(p["result"] is not None and "advantages" in p for p in evaluated)
    summary = next(p for p in evaluated if p["status"] == "correct")["diagnostics_summary"]
    assert summary["bottleneck"] in ("memory-bound", "latency/occupancy-bound")
    # each node is created before it is evaluated
    order = {(e["type"], e["payload"].get("id")): e["seq"] for e in events}
    assert all(order[("node_created", p["id"])] < order[("node_evaluated", p["id"])]
               for p in evaluated)

    best = [e["payload"] for e in events if e["type"] == "best_improved"]
    assert best and best[0]["previous_node_id"] is None
    rewards = [b["reward"] for b in best]
    assert rewards == sorted(rewards)
