"""Anything outside the templates is refused with the ops that stopped it (no torch
fallback is ever written)."""

import pytest

from search_engine.synthesis.base import NotCoveredError
from search_engine.synthesis.offline import OfflineSynthesizer

from .conftest import library_source
from .test_offline_templates import problem


def refusal(source: str) -> NotCoveredError:
    with pytest.raises(NotCoveredError) as info:
        OfflineSynthesizer().analysis(source)
    return info.value


def test_conv2d_is_refused_with_the_op_name():
    error = refusal(library_source("conv2d_relu"))
    assert error.ops == ["Conv2d"]
    assert "does not cover" in str(error) and "Conv2d" in str(error)


@pytest.mark.parametrize("forward,inputs,args,op", [
    ("torch.cumsum(x, dim=1)", "torch.randn(4, 8)", "x", "cumsum"),
    ("x.view(-1)", "torch.randn(4, 8)", "x", "view"),
    ("x[:, :4] * 2", "torch.randn(4, 8)", "x", "getitem"),
    ("torch.sum(x, dim=1) + torch.sum(x, dim=0)", "torch.randn(4, 4)", "x", "sum"),
    ("x @ (w * 2)", "torch.randn(4, 16), torch.randn(16, 16)", "x, w", "mul"),
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
    outcome = SearchRunner(library_source("conv2d_relu"), "h200", OfflineSynthesizer(),
                           NeverCalled(), SearchConfig(budget=3),
                           on_event=events.append).run()
    assert outcome.status == "failed" and "Conv2d" in outcome.reason
    assert events[-1]["payload"]["status"] == "failed"
