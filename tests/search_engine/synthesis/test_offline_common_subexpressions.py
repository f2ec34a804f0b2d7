"""A computation the reference repeats is planned once (`frontend.ir.deduplicated`)."""

from __future__ import annotations

import torch

from search_engine.synthesis.offline.frontend.ir import Const, IRNode, deduplicated

from search_engine.synthesis.offline.synthesizer import family_module

from .conftest import run_candidate
from .test_offline_staged import local_analysis, problem


def _node(i, op, operands, shape=(4, 8), **attrs):
    return IRNode(i, op, list(operands), attrs, shape, torch.float32)


def test_repeated_ops_are_kept_once_and_their_users_repointed():
    nodes = {0: _node(0, "input", [], index=0),
             1: _node(1, "sum", [0], (4, 1), dims=(1,), keepdim=True),
             2: _node(2, "sum", [0], (4, 1), dims=(1,), keepdim=True),  # the same sum
             3: _node(3, "sub", [0, 1]),
             4: _node(4, "sub", [0, 2]),  # the same once 2 is 1
             5: _node(5, "mul", [3, 4])}
    out, output = deduplicated(nodes, 5)
    assert sorted(out) == [0, 1, 3, 5] and output == 5
    assert out[5].operands == [3, 3]
    assert nodes[5].operands == [3, 4]  # the caller's graph is not changed


def test_different_attributes_constants_or_inputs_stay_apart():
    nodes = {0: _node(0, "input", [], index=0),
             1: _node(1, "input", [], index=1),
             2: _node(2, "sum", [0], (4, 1), dims=(1,), keepdim=True),
             3: _node(3, "sum", [0], (4,), dims=(1,), keepdim=False),
             4: _node(4, "mul", [0, Const(2.0)]),
             5: _node(5, "mul", [0, Const(3.0)]),
             6: _node(6, "add", [0, 1]),
             7: _node(7, "add", [4, 5]),
             8: _node(8, "add", [7, 6]),
             9: _node(9, "mul", [8, 2])}
    out, output = deduplicated(nodes, 9)
    assert out is nodes and output == 9


def test_a_standardisation_reads_x_for_one_mean_and_one_variance(tmp_path):
    source = problem("", "(x - x.mean(dim=1, keepdim=True)) / x.std(dim=1, keepdim=True)",
                     "torch.randn(4, 64)")
    an = local_analysis(source)
    sums = [n for n in an.nodes.values() if n.op == "sum"]
    assert len(sums) == 2  # the mean's and the variance's: the repeated mean is gone
    subs = [n for n in an.nodes.values() if n.op == "sub"]
    assert len(subs) == 1  # x - mean, shared by the output and the variance
    module = family_module(an)
    candidate = module.render(source, an, module.default_params(an, "interpreter", "strict"))
    expected, got, _ = run_candidate(source, candidate, tmp_path)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
