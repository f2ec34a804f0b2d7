"""The search records a child the target cannot hold (`Proposal.pruned`) as a `pruned` node
with its reason, and never spends an evaluation or budget on it."""

from __future__ import annotations

from search_engine.search import SearchConfig, SearchRunner
from search_engine.synthesis.offline import OfflineSynthesizer
from search_engine.synthesis.offline.spaces import templates
from search_engine.synthesis.offline.spaces.resources import PRUNED_SHARED_MEMORY

from .conftest import ScriptedExecutor, problem_source


class _AlsoOverflowing(OfflineSynthesizer):
    """The offline synthesizer, plus one move that always overflows shared memory."""

    def propose(self, request, n, rng):
        proposals = super().propose(request, n, rng)
        an = self.analysis(request.problem_source)
        base = dict(proposals[0].params)
        big = {**base, "BLOCK_N": 256, "num_stages": 5}
        reason = templates.resource_problem(an, big, request.target)
        proposal = type(proposals[0])(
            source=self.render(request.problem_source, big) + f"\n# {rng.random()}\n",
            transformation="stages_up", params=big, pruned=reason)
        return proposals + [proposal]


def test_the_search_records_pruned_children_without_evaluating_them():
    executor = ScriptedExecutor()
    runner = SearchRunner(problem_source("gemm_bias_relu"), "h200", _AlsoOverflowing(),
                          executor, SearchConfig(budget=4, children_per_step=2, seed=0))
    outcome = runner.run()
    pruned = [n for n in runner.tree.nodes.values() if n.status == "pruned"]
    assert pruned, "the overflowing children are in the tree"
    for node in pruned:
        assert node.result is None and not node.evaluated
        assert node.origin["pruned"].startswith(PRUNED_SHARED_MEMORY)
        assert node.to_dict()["status"] == "pruned"
    sent = {r.candidate_source for r in executor.requests}
    assert not sent & {n.source for n in pruned}  # never cost an evaluation
    assert outcome.evaluated == 4 == len(executor.requests)
