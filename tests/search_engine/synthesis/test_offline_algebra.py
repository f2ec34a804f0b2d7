"""Exact rewrites before planning (`plan/algebra.py`): a sum over a GEMM's output columns
becomes a product with the weight's column sums (no GEMM left), a reduction over unit dims
is its input; where the algebra does not hold, the graph is left as it was."""

from __future__ import annotations

import pytest
import torch

from search_engine.synthesis.offline.frontend.json_io import analysis_to_json
from search_engine.synthesis.offline.plan.algebra import simplified
from search_engine.synthesis.offline.plan.classify import analysis_from_json
from search_engine.synthesis.offline.plan.kernel_plan import kernel_plan
from search_engine.synthesis.offline.spaces import staged

from .conftest import run_candidate
from .test_offline_staged import local_analysis, problem

LINEAR = ("self.linear = nn.Linear(20, 13)\nself.sub = nn.Parameter(torch.randn(13))\n"
          "self.conv = nn.Conv1d(4, 4, 3, groups=2)\nself.conv2 = nn.Conv1d(4, 4, 3)")


def _ops(an) -> list[str]:
    return [n.op for n in an.topo()]


def _render_and_run(source, tmp_path):
    an = local_analysis(source)
    candidate = staged.render(source, an, staged.default_params(an, "interpreter", "strict"))
    expected, got, _ = run_candidate(source, candidate, tmp_path)
    return an, expected, got


@pytest.mark.parametrize("forward,inputs,args", [
    # KernelBench's Gemm + Divide + Sum + Scaling
    ("torch.sum(self.linear(x) / 2.0, dim=1, keepdim=True) * 1.5", "torch.randn(9, 20)", "x"),
    # Gemm + Subtract + GlobalAvgPool + LogSumExp + GELU + residual
    ("F.gelu(torch.logsumexp(torch.mean(self.linear(x) - self.sub, dim=1, keepdim=True), "
     "dim=1, keepdim=True)) + x", "torch.randn(9, 20)", "x"),
    # a plain weight, a batched input, the sum dropping its dim
    ("torch.sum(x @ w, dim=-1)", "torch.randn(3, 5, 20), torch.randn(20, 13)", "x, w"),
    # the GEMM on the right of a subtraction, then negated and scaled by a per-row factor
    ("(-(2.0 - self.linear(x)) * s).mean(-1)", "torch.randn(9, 20), torch.randn(9, 1)",
     "x, s"),
    # a bias that is already per row (broadcast over the columns)
    ("torch.sum(self.linear(x) + b, dim=1)", "torch.randn(9, 20), torch.randn(9, 1)", "x, b"),
])
def test_a_sum_over_a_gemms_columns_is_no_gemm_and_correct(forward, inputs, args, tmp_path):
    source = problem(LINEAR, forward, inputs, args)
    an, expected, got = _render_and_run(source, tmp_path)
    assert "matmul" not in _ops(an), _ops(an)
    assert any("no full GEMM" in note for note in kernel_plan(an).notes)  # said to the user
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)


CONVS = {
    # KernelBench L2 13's pattern: a transposed 3-D conv, a channel mean, then a softmax over
    # the (now unit) channel dim
    "transposed": ("self.conv = nn.ConvTranspose3d(3, 6, 3, stride=2, padding=1, "
                   "output_padding=1)\nself.bias = nn.Parameter(torch.randn(1, 1, 1, 1, 1))",
                   "torch.tanh(torch.softmax(torch.mean(self.conv(x), dim=1, keepdim=True) "
                   "+ self.bias, dim=1)) * 2.0", "torch.randn(2, 3, 3, 4, 3)"),
    "strided_2d": ("self.conv = nn.Conv2d(4, 7, 3, stride=2, padding=1, dilation=2)\n"
                   "self.bias = nn.Parameter(torch.randn(7, 1, 1))",
                   "torch.sum((self.conv(x) - self.bias) * 0.5, dim=1)",
                   "torch.randn(2, 4, 9, 8)"),
}


@pytest.mark.parametrize("name", sorted(CONVS))
def test_a_sum_over_a_convs_channels_is_a_one_channel_conv(name, tmp_path):
    init, forward, inputs = CONVS[name]
    source = problem(init, forward, inputs)
    an, expected, got = _render_and_run(source, tmp_path)
    conv = next(n for n in an.topo() if n.op == "conv")
    assert conv.shape[1] == 1
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("forward", [
    "torch.sum(self.linear(x), dim=0)",                          # over the rows, not columns
    "torch.sum(torch.relu(self.linear(x)), dim=1)",              # not linear
    "(lambda y: torch.sum(y * y, dim=1))(self.linear(x))",       # the GEMM read twice
    "(lambda y: torch.sum(y, dim=1) + y[:, 0])(self.linear(x))",  # its output used beside
    "torch.sum(self.linear(x) * self.sub, dim=1)",               # a factor varying by column
    "torch.sum(self.linear(x) / (self.sub + 3.0), dim=1)",
    "torch.sum(self.conv(x.reshape(9, 4, 5)), dim=1)",           # a grouped conv
    "torch.sum(self.conv2(x.reshape(9, 4, 5)) * self.conv2.bias.view(1, 4, 1), dim=1)",
])
def test_where_the_algebra_does_not_hold_the_gemm_stays(forward, tmp_path):
    source = problem(LINEAR, forward, "torch.randn(9, 20)")
    an = local_analysis(source)
    assert "matmul" in _ops(an) or all(n.shape[1] > 1 for n in an.topo() if n.op == "conv")


def test_a_reduction_of_an_already_reduced_value_is_its_input(tmp_path):
    source = problem("", "torch.logsumexp(torch.amax(torch.sum(x, dim=1, keepdim=True), "
                     "dim=1, keepdim=True), dim=1)", "torch.randn(6, 11)")
    an, expected, got = _render_and_run(source, tmp_path)
    assert _ops(an).count("sum") == 1 and "max" not in _ops(an)  # the row sum alone
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_the_rewrite_is_stable_through_the_sandboxs_json():
    """The sandbox classifies (and so rewrites) before it answers; the host classifies the
    answer again: the second pass finds nothing to do and the graph is the same."""
    source = problem(LINEAR, "torch.sum(self.linear(x) - self.sub, dim=1, keepdim=True)",
                     "torch.randn(9, 20)")
    an = local_analysis(source)
    again = analysis_from_json(analysis_to_json(an))
    assert [(n.op, n.operands, n.shape) for n in again.topo()] == \
        [(n.op, n.operands, n.shape) for n in an.topo()]
    assert simplified(an.nodes, an.output) == (an.nodes, an.output)
    assert list(an.nodes) == list(range(len(an.nodes)))
    inputs = [n.attrs["index"] for n in an.topo() if n.op == "input"]
    assert inputs == sorted(inputs)


def test_the_callers_graph_is_left_as_it_was():
    from search_engine.synthesis.offline.frontend.trace import trace_module

    from .conftest import load_problem

    source = problem(LINEAR, "torch.sum(self.linear(x) * 2.0, dim=1)", "torch.randn(9, 20)")
    traced = trace_module(load_problem(source))
    before = [(n.id, n.op, list(n.operands), n.shape, dict(n.attrs)) for n in traced.topo()]
    nodes, output = simplified(traced.nodes, traced.output)
    assert "matmul" not in [n.op for n in nodes.values()]
    assert [(n.id, n.op, list(n.operands), n.shape, dict(n.attrs))
            for n in traced.topo()] == before


POOLED = ("self.linear = nn.Linear(20, 18)\nself.pool = nn.AvgPool1d(4)\n"
          "self.pool2d = nn.AvgPool1d(3, stride=3)\nself.b = nn.Parameter(torch.randn(18))")


@pytest.mark.parametrize("forward,inputs,args,groups", [
    # KernelBench L2 98's pattern: the pool over x.unsqueeze(1), then GELU, scale, max
    ("torch.max(F.gelu(self.pool(self.linear(x).unsqueeze(1)).squeeze(1)) * 2.0, dim=1)"
     ".values", "torch.randn(9, 20)", "x", 4),  # 18 columns: the last 2 dropped (floor)
    # a plain weight, a bias and a per-row factor on the way, the pool over [C, L]
    ("self.pool2d((x @ w + self.b) * s - 1.5)", "torch.randn(9, 20), torch.randn(20, 18), "
     "torch.randn(9, 1)", "x, w, s", 6),
    # a residual of the GEMM's width added before the pool
    ("self.pool(((self.linear(x) + r) / 3.0).unsqueeze(1))", "torch.randn(9, 20), "
     "torch.randn(9, 18)", "x, r", 4),
])
def test_an_average_pool_over_a_gemms_columns_is_a_narrower_gemm(forward, inputs, args,
                                                                   groups, tmp_path):
    source = problem(POOLED, forward, inputs, args)
    an, expected, got = _render_and_run(source, tmp_path)
    assert "pool" not in _ops(an)
    matmul = next(n for n in an.topo() if n.op == "matmul")
    assert matmul.shape[-1] == groups  # k times fewer columns
    assert any("window average" in note for note in kernel_plan(an).notes)
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("forward", [
    "self.pool(torch.relu(self.linear(x)).unsqueeze(1))",        # not linear
    "F.avg_pool1d(self.linear(x).unsqueeze(1), 4, stride=2)",    # overlapping windows
    "F.avg_pool1d(self.linear(x).unsqueeze(1), 4, padding=1)",   # padded
    "F.max_pool1d(self.linear(x).unsqueeze(1), 4)",              # a max
    "self.pool((self.linear(x) * self.b).unsqueeze(1))",         # a factor varying by column
])
def test_pools_the_algebra_does_not_cover_keep_the_gemm(forward):
    an = local_analysis(problem(POOLED, forward, "torch.randn(9, 20)"))
    assert "pool" in _ops(an) and next(
        n for n in an.topo() if n.op == "matmul").shape[-1] == 18
