"""A running session can be paused, resumed and cancelled from another thread."""

import threading
import time

from search_engine.search import SearchConfig, SearchRunner
from search_engine.synthesis.offline import OfflineSynthesizer

from .conftest import ScriptedExecutor, problem_source


def wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def start(executor, events, **config):
    runner = SearchRunner(problem_source("softmax"), "h200", OfflineSynthesizer(), executor,
                          SearchConfig(**config), on_event=events.append)
    outcome = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("o", runner.run()))
    thread.start()
    return runner, thread, outcome


def statuses(events):
    return [e["payload"]["status"] for e in events if e["type"] == "status_changed"]


def test_pause_stops_new_work_and_resume_continues():
    gate = threading.Event()
    executor = ScriptedExecutor(gate=gate)
    events = []
    try:
        runner, thread, outcome = start(executor, events, budget=10, children_per_step=2,
                                        max_in_flight=2)
        # the first evaluation runs alone (it measures the baselines)
        assert wait_for(lambda: len(executor.requests) == 1)
        runner.pause()
        gate.set()  # the in-flight evaluation finishes while paused...
        assert wait_for(lambda: runner.evaluated == 1)
        time.sleep(0.3)
        assert len(executor.requests) == 1  # ...but nothing new is submitted
        assert runner.status == "paused"
        runner.resume()
        thread.join(30)
        assert outcome["o"].status == "completed" and outcome["o"].evaluated == 10
        assert statuses(events) == ["running", "paused", "running", "completed"]
    finally:
        gate.set()
        executor.shutdown()


def test_cancel_marks_in_flight_nodes_and_stops():
    gate = threading.Event()
    executor = ScriptedExecutor(gate=gate)
    events = []
    try:
        runner, thread, outcome = start(executor, events, budget=10, children_per_step=2,
                                        max_in_flight=2)
        assert wait_for(lambda: len(executor.requests) == 1)
        runner.cancel()
        thread.join(10)
        assert not thread.is_alive()
        result = outcome["o"]
        assert result.status == "cancelled" and result.evaluated == 0
        assert [n["status"] for n in result.nodes if n["id"]] == ["cancelled"]
        assert statuses(events)[-1] == "cancelled"
    finally:
        gate.set()
        executor.shutdown()


def test_cancel_while_paused():
    executor = ScriptedExecutor()
    events = []
    try:
        runner, thread, outcome = start(executor, events, budget=50, children_per_step=1,
                                        max_in_flight=1)
        assert wait_for(lambda: runner.evaluated >= 1)
        runner.pause()
        time.sleep(0.1)
        runner.cancel()
        thread.join(10)
        assert outcome["o"].status == "cancelled"
        assert outcome["o"].evaluated < 50
    finally:
        executor.shutdown()
