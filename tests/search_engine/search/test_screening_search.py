"""Issue 29: an expansion screens a family of configurations and fully evaluates only the
fastest finalists; the others are `screened` nodes that never become the best."""

from __future__ import annotations

import hashlib
from concurrent.futures import Future

from search_engine.evaluation.screening import ScreenedConfiguration, ScreenResult
from search_engine.search import SearchConfig, SearchRunner
from search_engine.synthesis.offline import OfflineSynthesizer

from .conftest import ScriptedExecutor, problem_source


def _digest(source: str) -> int:
    return int(hashlib.sha256(source.encode()).hexdigest()[:8], 16)


class ScreeningExecutor(ScriptedExecutor):
    """Scripted full evaluations, and scripted screenings: a timing from the source's hash,
    every fifth configuration failing its spot-check."""

    def __init__(self):
        super().__init__(max_delay=0.0)
        self.screened: list[list[str]] = []

    def screen(self, request) -> Future:
        self.screened.append(list(request.sources))
        configurations = []
        for index, source in enumerate(request.sources):
            digest = _digest(source)
            if digest % 5 == 0:
                configurations.append(ScreenedConfiguration(index, False, "incorrect: scripted"))
            else:
                configurations.append(ScreenedConfiguration(
                    index, True, "passed the spot-check", 0.001 + digest % 1000 / 1e5, 0.0, 3,
                    "scripted"))
        future: Future = Future()
        future.set_result(ScreenResult(configurations, request.target))
        return future


def _run(executor, **config):
    runner = SearchRunner(problem_source("softmax"), "h200", OfflineSynthesizer(), executor,
                          SearchConfig(seed=0, **config))
    return runner, runner.run()


def test_each_expansion_screens_a_family_and_evaluates_only_its_fastest():
    executor = ScreeningExecutor()
    runner, outcome = _run(executor, budget=5, children_per_step=2, screen=6)
    assert executor.screened and all(len(f) == 6 for f in executor.screened)
    evaluated = [r.candidate_source for r in executor.requests]
    assert outcome.evaluated == len(evaluated) == 5
    nodes = runner.tree.nodes.values()
    screened = [n for n in nodes if n.status == "screened"]
    finalists = [n for n in nodes if (n.origin.get("screen") or {}).get("finalist")]
    assert screened and finalists
    assert outcome.screened == len(screened) + len(finalists) == sum(map(len, executor.screened))
    for node in screened:
        assert node.origin["screened"] is True and not node.evaluated
        assert node.source not in evaluated  # never cost a full evaluation
    # the finalists of a step are its fastest configurations that passed
    for family in executor.screened:
        timed = {n.source: n.origin["screen"] for n in nodes if n.source in family}
        passed = sorted((s["median_ms"], src) for src, s in timed.items() if s["passed"])
        chosen = {src for src, s in timed.items() if s["finalist"]}
        assert chosen == {src for _, src in passed[:len(chosen)]}
        assert all(timed[src]["passed"] for src in chosen)


def test_a_screened_configuration_never_becomes_the_best():
    """Screened nodes carry no result, so not even the fastest screening can make one best."""
    executor = ScreeningExecutor()
    runner, outcome = _run(executor, budget=4, children_per_step=1, screen=5)
    best = runner.tree.best()
    assert best is not None and best.status == "correct" and best.evaluated
    assert outcome.best["id"] == best.id and "screened" not in best.origin
    events_statuses = {n["status"] for n in outcome.nodes}
    assert "screened" in events_statuses


def test_without_screening_support_every_child_is_evaluated_as_before():
    executor = ScriptedExecutor(max_delay=0.0)  # no `screen`
    runner, outcome = _run(executor, budget=4, children_per_step=2, screen=6)
    assert outcome.screened == 0
    assert not [n for n in runner.tree.nodes.values() if n.status == "screened"]
    assert outcome.evaluated == 4


class FailingScreens(ScreeningExecutor):
    def screen(self, request) -> Future:
        self.screened.append(list(request.sources))
        future: Future = Future()
        future.set_result(ScreenResult([ScreenedConfiguration(i, False, "incorrect: scripted")
                                        for i in range(len(request.sources))], request.target))
        return future


def test_when_no_configuration_passes_the_first_ones_are_still_fully_evaluated():
    """A full verdict (with its diagnosis) is what the next step learns from."""
    executor = FailingScreens()
    runner, outcome = _run(executor, budget=3, children_per_step=1, screen=4)
    # the first evaluation is never screened; each later step screens a family
    assert outcome.evaluated == 3 and len(executor.screened) == 2
    for family, request in zip(executor.screened, executor.requests[1:]):
        assert request.candidate_source == family[0]


class BrokenScreens(ScreeningExecutor):
    def screen(self, request) -> Future:
        raise AttributeError("this executor's backend cannot screen")


def test_an_executor_that_cannot_screen_falls_back_to_full_evaluations():
    runner, outcome = _run(BrokenScreens(), budget=3, children_per_step=1, screen=4)
    assert outcome.status == "completed" and outcome.evaluated == 3 and outcome.screened == 0


def test_a_rebuilt_search_keeps_screened_nodes_unevaluated():
    _, first = _run(ScreeningExecutor(), budget=2, children_per_step=1, screen=4)
    screened = {n["source"] for n in first.nodes if n["status"] == "screened"}
    assert screened
    executor = ScreeningExecutor()
    runner = SearchRunner.from_nodes(first.nodes, problem_source("softmax"), "h200",
                                     OfflineSynthesizer(), executor,
                                     SearchConfig(seed=0, budget=4, children_per_step=1,
                                                  screen=4), next_seq=1000)
    outcome = runner.run()
    assert outcome.evaluated == 4
    assert not screened & {r.candidate_source for r in executor.requests}
    assert outcome.screened == first.screened + sum(map(len, executor.screened))


class _ManyOverflowing(OfflineSynthesizer):
    """The offline synthesizer, plus five configurations that never fit the target."""

    def propose(self, request, n, rng):
        proposals = super().propose(request, n, rng)
        extra = [type(proposals[0])(source=proposals[0].source + f"\n# {rng.random()}\n",
                                    transformation="stages_up", params={},
                                    pruned="pruned.shared_memory: scripted")
                 for _ in range(5)]
        return proposals + extra


def test_a_screened_family_shows_only_a_steps_worth_of_pruned_configurations():
    executor = ScreeningExecutor()
    runner = SearchRunner(problem_source("softmax"), "h200", _ManyOverflowing(), executor,
                          SearchConfig(seed=0, budget=3, children_per_step=1, screen=6))
    runner.run()
    per_parent: dict = {}
    for node in runner.tree.nodes.values():
        if node.status == "pruned":
            per_parent[node.parent_id] = per_parent.get(node.parent_id, 0) + 1
    steps = len(executor.screened) + 1  # the first evaluation's step is never screened
    assert per_parent and max(per_parent.values()) <= steps
    assert sum(per_parent.values()) == steps  # one per step


def test_the_first_evaluation_is_the_default_and_waits_for_no_screening():
    """The template's default is evaluated before anything is screened: a search that runs
    out of time during its first screening still has a verdict."""
    executor = ScreeningExecutor()
    runner, _ = _run(executor, budget=3, children_per_step=2, screen=6)
    first = runner.tree.nodes[1]
    assert first.parent_id == 0 and first.evaluated and "screen" not in first.origin
    assert executor.requests[0].candidate_source == first.source
    assert all(first.source not in family for family in executor.screened)


class RecordingDeadlines(ScreeningExecutor):
    def __init__(self):
        super().__init__()
        self.deadlines = []

    def screen(self, request) -> Future:
        self.deadlines.append(request.deadline_s)
        return super().screen(request)


def test_a_time_limit_gives_each_screening_a_deadline_that_leaves_room_for_finalists():
    limited = RecordingDeadlines()
    _run(limited, budget=4, children_per_step=1, screen=4, max_seconds=120)
    assert limited.deadlines and all(5.0 <= d < 118.0 for d in limited.deadlines)
    unlimited = RecordingDeadlines()
    _run(unlimited, budget=4, children_per_step=1, screen=4)
    assert unlimited.deadlines and set(unlimited.deadlines) == {None}


def test_the_deadline_is_the_time_left_less_the_finalists_evaluations():
    import time

    runner = SearchRunner(problem_source("softmax"), "h200", OfflineSynthesizer(),
                          ScreeningExecutor(), SearchConfig(seed=0, screen=8, max_seconds=20,
                                                            max_in_flight=4))
    runner._started = time.monotonic()
    runner._evaluation_seconds = [40.0, 10.0]  # the first (with baselines) is not typical
    assert 5.0 <= runner._screen_deadline(2) <= 5.5  # 20 - (10 * 1.25 + 2)
    assert 5.0 <= runner._screen_deadline(4) <= 5.5  # four finalists run at once
    assert runner._screen_deadline(5) == 0.0  # two rounds of evaluations: no time to screen
    runner._evaluation_seconds = [40.0, 13.0]
    assert runner._screen_deadline(2) == 0.0


class SkippingScreens(ScreeningExecutor):
    """Screens the first half of each family; the deadline came before the rest."""

    def screen(self, request) -> Future:
        future = super().screen(request)
        result = future.result()
        half = len(result.configurations) // 2
        for config in result.configurations[half:]:
            config.passed, config.median_ms, config.skipped = False, None, True
            config.reason = "not screened: the screening's time ran out"
        return future


def test_configurations_the_deadline_skipped_are_neither_nodes_nor_counted():
    executor = SkippingScreens()
    runner, outcome = _run(executor, budget=4, children_per_step=1, screen=6)
    screened_sources = {n.source for n in runner.tree.nodes.values()
                        if n.origin.get("screen")}
    for family in executor.screened:
        assert not screened_sources & set(family[3:])  # the skipped half made no node
    assert outcome.screened == 3 * len(executor.screened)


class HangingScreens(ScreeningExecutor):
    def screen(self, request) -> Future:
        self.screened.append(list(request.sources))
        return Future()  # never finishes: only the time limit ends it


def test_a_time_limit_during_a_screening_stops_as_a_time_limit_with_the_first_verdict():
    # 20 s, not less: the screening must fit (MIN_SCREEN_S after the first evaluation and the
    # finalists' reserve) even when a loaded box makes the first step take seconds
    runner, outcome = _run(HangingScreens(), budget=6, children_per_step=1, screen=4,
                           max_seconds=20)
    assert outcome.stop == "time_limit", outcome.reason
    assert outcome.best is not None and outcome.evaluated == 1
