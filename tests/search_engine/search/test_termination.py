"""Budget, wall-clock, cost and plateau limits; a synthesizer that runs out of ideas."""

from search_engine.search import SearchConfig, SearchRunner
from search_engine.synthesis.base import Proposal
from search_engine.synthesis.offline import OfflineSynthesizer

from .conftest import problem_source


def run(executor, synthesizer=None, **config):
    return SearchRunner(problem_source("softmax"), "h200", synthesizer or OfflineSynthesizer(),
                        executor, SearchConfig(**config)).run()


def test_budget_counts_evaluations(scripted_executor):
    outcome = run(scripted_executor, budget=5, children_per_step=2)
    assert outcome.evaluated == 5 and "budget of 5" in outcome.reason
    assert len(scripted_executor.requests) == 5


def test_plateau_stops_early(scripted_executor):
    outcome = run(scripted_executor, budget=200, plateau_window=6, plateau_epsilon=10.0)
    assert outcome.reason.startswith("plateau") and outcome.evaluated < 200


def test_wall_clock_limit(scripted_executor):
    outcome = run(scripted_executor, budget=500, max_seconds=0.0)
    assert "time limit" in outcome.reason and outcome.evaluated == 0


class PricedSynthesizer(OfflineSynthesizer):
    def propose(self, request, n, rng):
        proposals = super().propose(request, n, rng)
        for p in proposals:
            p.usage = {"prompt_tokens": 100, "completion_tokens": 50, "cost_usd": 0.25}
        return proposals


def test_cost_limit(scripted_executor):
    outcome = run(scripted_executor, PricedSynthesizer(), budget=100, max_cost_usd=1.0,
                  children_per_step=1, max_in_flight=1)
    assert "cost limit" in outcome.reason
    assert outcome.cost_usd == 1.0 and outcome.evaluated == 4


class OneShot:
    name, supports_crossover = "oneshot", False

    def __init__(self, source):
        self.source = source

    def propose(self, request, n, rng):
        if self.source in request.known_sources:
            return []
        return [Proposal(self.source, "fixed")]


def test_exhausted_synthesizer_ends_the_search(scripted_executor):
    outcome = run(scripted_executor, OneShot("class ModelNew: pass\n"), budget=10)
    assert outcome.evaluated == 1 and outcome.reason.startswith("exhausted")


class Broken:
    name, supports_crossover = "broken", False

    def propose(self, request, n, rng):
        raise ConnectionError("endpoint unreachable")


def test_a_failing_synthesizer_stops_with_its_error(scripted_executor):
    events = []
    outcome = SearchRunner(problem_source("softmax"), "h200", Broken(), scripted_executor,
                           SearchConfig(budget=4), on_event=events.append).run()
    assert outcome.status == "completed" and outcome.evaluated == 0
    assert outcome.reason == "synthesis failed: ConnectionError: endpoint unreachable"
    assert any(e["type"] == "log" and e["payload"]["level"] == "warning" for e in events)
