"""The kernel plan (issue 28): which kernels a problem becomes, by pattern, with its fusions,
or what is refused and why; read off the decisions the writers render, so the kernels a
candidate launches are the plan's, in its order. Shapes are tiny (the interpreter)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from search_engine.synthesis.base import NotCoveredError
from search_engine.synthesis.offline import OfflineSynthesizer
from search_engine.synthesis.offline.coverage import coverage_of
from search_engine.synthesis.offline.plan.kernel_plan import kernel_plan, plan_lines, refused_plan
from search_engine.synthesis.offline.synthesizer import family_module
from search_engine.synthesis.offline.writers import layout_copy

from .conftest import traced_analysis
from .test_offline_staged import problem

GEMM_BIAS_RELU = problem("self.fc = nn.Linear(8, 6)", "torch.relu(self.fc(x))",
                         "torch.randn(5, 8)")
SOFTMAX = problem("", "torch.softmax(x, dim=1)", "torch.randn(5, 9)")
GEMM_LOGSUMEXP = problem("self.fc = nn.Linear(8, 6)",
                         "torch.logsumexp(self.fc(x), dim=1, keepdim=True)", "torch.randn(5, 8)")
CONV_EPILOGUE = problem("self.conv = nn.Conv2d(3, 5, 3)", "torch.relu(self.conv(x) + 1.0)",
                        "torch.randn(2, 3, 7, 6)")
GROUPNORM = problem("self.gn = nn.GroupNorm(3, 6)", "self.gn(x)", "torch.randn(2, 6, 3, 5)")
GROUPNORM_LONG_ROWS = problem("self.gn = nn.GroupNorm(2, 4)", "self.gn(x)",
                              "torch.randn(1, 4, 72, 64)")
# overlapping windows: the pool keeps a kernel of its own
CONV_POOL = problem("self.conv = nn.Conv2d(3, 4, 3)\nself.pool = nn.MaxPool2d(3, stride=2)",
                    "self.pool(torch.sigmoid(self.conv(x)))", "torch.randn(2, 3, 8, 8)")
# windows that tile the conv's output: the conv's kernel pools (plan.stages.fused_pool)
CONV_POOL_TILED = problem("self.conv = nn.Conv2d(3, 4, 3)\nself.pool = nn.MaxPool2d(2)",
                          "self.pool(torch.sigmoid(self.conv(x)))", "torch.randn(2, 3, 8, 8)")
EINSUM_VIEW = problem("", "torch.einsum('bijl,lk->bijk', a, b)",
                      "torch.randn(2, 3, 5, 8), torch.randn(8, 6)", "a, b")
UNBATCHED_CONV = problem("self.w = nn.Parameter(torch.randn(4, 3, 3))", "F.conv1d(x, self.w)",
                         "torch.randn(3, 9)")
MEDIAN = problem("", "torch.median(torch.relu(x), dim=1).values", "torch.randn(2, 3, 4)")


def plan_of(source: str):
    return kernel_plan(traced_analysis(source))


def test_a_gemm_with_bias_and_relu_is_one_kernel_with_its_epilogue_fused():
    plan = plan_of(GEMM_BIAS_RELU)
    assert plan.family == "matmul" and plan.pattern == "gemm + epilogue"
    [gemm] = plan.kernels
    assert gemm.ops == ["matmul", "add", "relu"]
    assert gemm.epilogue == ["add", "relu"]
    assert gemm.stores == "the output"
    assert any("transposed" in note for note in gemm.layout)  # Linear's weight, read as B^T


def test_a_softmax_is_one_row_reduction():
    plan = plan_of(SOFTMAX)
    [rows] = plan.kernels
    assert plan.family == "rows" and rows.pattern == "row reduction"
    assert rows.ops == ["max", "sub", "exp", "sum", "div"]
    assert "rows of [5, 9] reduced over dims [1]" in rows.layout


def test_a_gemm_with_a_logsumexp_is_a_gemm_then_a_rows_tail():
    plan = plan_of(GEMM_LOGSUMEXP)
    assert plan.pattern == "multi-stage"
    assert [k.pattern for k in plan.kernels] == ["gemm + epilogue", "row reduction"]
    assert plan.kernels[0].ops == ["matmul", "add"]  # the bias fuses; the reduction cannot
    assert plan.kernels[0].stores.startswith("an fp32 buffer")
    assert "logsumexp" not in plan.kernels[1].ops and "log" in plan.kernels[1].ops


def test_a_conv_with_its_epilogue_is_one_conv_kernel():
    plan = plan_of(CONV_EPILOGUE)
    [conv] = plan.kernels
    assert plan.family == "conv" and conv.pattern == "convolution + epilogue"
    assert conv.ops == ["conv", "add", "relu"] and conv.epilogue == ["add", "relu"]


def test_a_groupnorm_over_short_rows_is_one_kernel_that_reads_them_once():
    plan = plan_of(GROUPNORM)  # rows of 30 elements: mean, variance and normalisation
    assert plan.family == "reduction" and plan.pattern == "row reduction"
    [kernel] = plan.kernels
    assert kernel.kernel == "kh_stage0_rows" and kernel.stores == "the output"
    assert kernel.ops.count("sum") == 2 and "rsqrt" in kernel.ops
    assert "read once" in kernel.layout[0] and "3 stages in one kernel" in kernel.layout[0]


def test_a_groupnorm_over_rows_longer_than_a_tile_is_a_staged_pipeline_of_two_kernels():
    # the statistics in one read (a moments kernel), then the normalisation
    plan = plan_of(GROUPNORM_LONG_ROWS)  # 2 x 72 x 64 = 9216 elements a row
    assert plan.family == "reduction" and plan.pattern == "multi-stage"
    assert [k.pattern for k in plan.kernels] == ["reduction", "pointwise"]
    assert plan.kernels[0].kernel.endswith("_moments")
    assert [k.stores for k in plan.kernels][-1] == "the output"
    assert all(k.stores != "the output" for k in plan.kernels[:-1])


def test_an_output_that_is_a_view_launches_no_copy_kernel():
    plan = plan_of(EINSUM_VIEW)
    assert [k.kernel for k in plan.kernels] == ["kh_stage0_matmul"]
    assert plan.kernels[0].stores == "the output"
    assert any("view (reshape)" in note for note in plan.notes)


def test_a_refusal_of_the_plan_names_the_ops_and_the_reason():
    with pytest.raises(NotCoveredError) as info:
        traced_analysis(UNBATCHED_CONV)
    plan = refused_plan(info.value)
    data = plan.to_dict()
    assert not plan.covered and plan.kernels == [] and data["pattern"] is None
    assert data["refused"]["ops"] == ["conv (input without a batch dim)"]
    assert data["refused"]["reason"] == str(info.value)
    assert plan_lines(data)[0].startswith("refused: ")


def test_coverage_of_an_uncovered_problem_carries_the_refused_plan():
    row = coverage_of(MEDIAN, OfflineSynthesizer())  # traced in the sandbox
    assert row["covered"] is False
    assert row["plan"]["refused"]["ops"] == row["ops"] == ["median"]
    assert row["plan"]["kernels"] == []


def test_coverage_of_a_covered_problem_carries_its_plan_as_json():
    row = coverage_of(CONV_POOL, OfflineSynthesizer())
    assert row["covered"] is True and row["plan"]["family"] == row["family"] == "conv"
    assert [k["pattern"] for k in row["plan"]["kernels"]] == ["convolution + epilogue", "pooling"]
    assert row["plan"]["kernels"][0]["epilogue"] == ["sigmoid"]
    assert json.loads(json.dumps(row["plan"])) == row["plan"]


@pytest.mark.parametrize("source", [GEMM_BIAS_RELU, SOFTMAX, GEMM_LOGSUMEXP, CONV_EPILOGUE,
                                    GROUPNORM, CONV_POOL, CONV_POOL_TILED, EINSUM_VIEW],
                         ids=["gemm_bias_relu", "softmax", "gemm_logsumexp", "conv_epilogue",
                              "groupnorm", "conv_pool", "conv_pool_tiled", "einsum_view"])
def test_the_candidate_launches_the_plans_kernels_in_its_order(source, run):
    an = traced_analysis(source)
    module = family_module(an)
    candidate = module.render(source, an, module.default_params(an, "interpreter", "strict"))
    expected, got, launched = run(source, candidate)
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
    # the plan names the kernels that compute; a channels-last conv also launches its copies
    computed = [k for k in launched if k != layout_copy.KERNEL]
    assert computed == [k.kernel for k in kernel_plan(an).kernels]


@pytest.mark.parametrize("source,split", [
    (SOFTMAX, {"variant": "split", "BLOCK_R": 256, "SPLIT": 2, "num_warps": 4}),
    (GEMM_BIAS_RELU, {"SPLIT_K": 2})], ids=["rows_split", "split_k"])
def test_a_split_parameter_adds_passes_around_the_plans_kernel(source, split, run):
    an = traced_analysis(source)
    module = family_module(an)
    params = {**module.default_params(an, "interpreter", "strict"), **split}
    expected, got, launched = run(source, module.render(source, an, params))
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
    [group] = kernel_plan(an).kernels
    assert group.kernel in launched and len(launched) > 1
    passes = [name for name in launched if name != group.kernel]
    assert all(name.startswith(f"{group.kernel}_pass") for name in passes) or \
        passes == ["epilogue_kernel"] == launched[1:]


REPO = Path(__file__).resolve().parents[3]
KEPT_PROBLEMS = sorted([*(REPO / "search_engine" / "problems_library").glob("[!_]*.py"),
                        *(REPO / "benchmarks" / "kernelbench_like").glob("level[123]/*.py")])


def launched_in_order(candidate: str) -> list[str]:
    """The @triton.jit kernels the candidate's code launches (``name[grid](...)``), in order
    (its layout copies aside: a copy is not one of the plan's kernels)."""
    kernels = set(re.findall(r"@triton\.jit\s*\ndef (\w+)\(", candidate)) - {layout_copy.KERNEL}
    return [name for name in re.findall(r"\b(\w+)\[", candidate) if name in kernels]


def test_every_kept_problems_candidate_launches_its_plans_kernels():
    """Read statically from the source (nothing runs), over the library and the
    KernelBench-like levels 1 to 3: a plan that disagreed with any writer would show here."""
    checked = 0
    for path in KEPT_PROBLEMS:
        source = path.read_text()
        try:
            an = traced_analysis(source)
        except NotCoveredError:
            continue
        module = family_module(an)
        candidate = module.render(source, an, module.default_params(an, "interpreter", "strict"))
        assert launched_in_order(candidate) == [k.kernel for k in kernel_plan(an).kernels], \
            path.name
        checked += 1
    assert checked >= 150
