"""Anything outside the templates is refused with the ops that stopped it (no torch
fallback is ever written)."""

import pytest

from search_engine.synthesis.base import NotCoveredError
from search_engine.synthesis.offline import OfflineSynthesizer

from .test_offline_templates import problem


def refusal(source: str) -> NotCoveredError:
    with pytest.raises(NotCoveredError) as info:
        OfflineSynthesizer().analysis(source)
    return info.value


# a selection (median) needs a sort-like family the offline synthesizer does not have
MEDIAN = problem("torch.median(torch.relu(x), dim=1).values", "torch.randn(2, 3, 4, 4)")


def test_an_uncovered_op_is_refused_with_its_name():
    error = refusal(MEDIAN)
    assert error.ops == ["median"]
    assert "does not cover" in str(error) and "median" in str(error)


@pytest.mark.parametrize("forward,inputs,args,op", [
    ("torch.sort(x, dim=1)[0]", "torch.randn(4, 8)", "x", "sort"),
    ("torch.fft.fft(x).real", "torch.randn(4, 8)", "x", "fft"),
    ("x[idx] * 2", "torch.randn(4, 8), torch.tensor([0, 2])", "x, idx", "getitem"),
    ("torch.topk(x, 3, dim=1).values", "torch.randn(4, 8)", "x", "topk"),
])
def test_uncovered_patterns_name_their_op(forward, inputs, args, op):
    error = refusal(problem(forward, inputs, args=args))
    assert any(op in o for o in error.ops), error.ops


def test_search_stops_with_the_reason_and_evaluates_nothing():
    from search_engine.search import SearchConfig, SearchRunner

    class NeverCalled:
        def submit(self, request):
            raise AssertionError("nothing should be evaluated")

        def shutdown(self):
            pass

    events = []
    outcome = SearchRunner(MEDIAN, "h200", OfflineSynthesizer(),
                           NeverCalled(), SearchConfig(budget=3),
                           on_event=events.append).run()
    assert outcome.status == "failed" and "median" in outcome.reason
    assert events[-1]["payload"]["status"] == "failed"
