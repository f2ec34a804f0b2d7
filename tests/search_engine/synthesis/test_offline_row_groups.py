"""Row groups of the staged family (`plan/stages.row_groups`, `writers/staged_rows.py`):
reductions of the same short rows and the pointwise stage after them are one kernel that
loads each row once (a GroupNorm or InstanceNorm after a conv: mean, variance and
normalisation from one read of the conv's output), right against the reference; reads that
are not of the row being computed keep their own stages; rows longer than the tile keep
the streamed reductions."""

from __future__ import annotations

import re

import pytest
import torch

from search_engine.synthesis.offline.plan.kernel_plan import kernel_plan
from search_engine.synthesis.offline.plan.stages import ROW_GROUP_TILE, plan, row_groups
from search_engine.synthesis.offline.spaces import staged

from .conftest import run_candidate
from .test_offline_staged import local_analysis, problem

GROUPED = {
    # conv, then InstanceNorm and a divide: one conv kernel, one row kernel
    "conv_instancenorm_divide": (problem(
        "self.conv = nn.Conv2d(3, 6, 3)\nself.n = nn.InstanceNorm2d(6)",
        "self.n(self.conv(x)) / 2.0", "torch.randn(2, 3, 9, 8)"), 2),
    # GroupNorm: the normalisation is over (N, C, H, W), the rows over (N, G, C/G*H*W)
    "groupnorm_affine": (problem("self.gn = nn.GroupNorm(3, 6)", "torch.tanh(self.gn(x))",
                                 "torch.randn(3, 6, 5, 7)"), 1),
    # a Linear, then GroupNorm over its features
    "gemm_groupnorm_swish": (problem(
        "self.fc = nn.Linear(10, 12)\nself.gn = nn.GroupNorm(4, 12)",
        "self.gn(self.fc(x)) * torch.sigmoid(self.gn(self.fc(x)))",
        "torch.randn(7, 10)"), None),
    # max, then the sum of exps around it (a staged logsumexp), several rows a program
    "logsumexp_keepdim": (problem("", "torch.logsumexp(x, dim=2, keepdim=True) - x",
                                  "torch.randn(3, 5, 37)"), 1),
    # siblings: two reductions of the same rows that do not read each other
    "amax_plus_mean": (problem("", "torch.amax(x, dim=(0, 2)) + torch.mean(x, dim=(0, 2))",
                               "torch.randn(4, 3, 21)"), 1),
    # a product in the group (its combine function comes along)
    "prod_over_sum": (problem("", "torch.prod(x, dim=1, keepdim=True) / "
                                  "torch.sum(x, dim=1, keepdim=True)",
                              "torch.rand(5, 9) + 0.5"), 1),
    # cross-entropy: the log-softmax's max and sum keep the class dim, the target's pick
    # does not; all three are one row kernel (then the mean over the rows' losses)
    "cross_entropy_mean": (problem("", "F.cross_entropy(x, t)",
                                   "torch.randn(6, 37), torch.randint(0, 37, (6,))",
                                   args="x, t"), None),
    "cross_entropy_weighted_none": (problem(
        "self.register_buffer('w', torch.rand(11) + 0.5)",
        "F.cross_entropy(x, t, weight=self.w, reduction='none', label_smoothing=0.1)",
        "torch.randn(9, 11), torch.randint(0, 11, (9,))", args="x, t"), 1),
    # a keepdim max and a plain sum around it, plus a per-row bias read once a row
    "max_keepdim_then_sum": (problem(
        "self.register_buffer('b', torch.randn(5, 1))",
        "torch.sum(torch.exp(x - torch.amax(x, dim=1, keepdim=True)) * self.b, dim=1)",
        "torch.randn(5, 23)"), 1),
    # a non-contiguous input read with its strides
    "instancenorm_transposed": (problem("self.n = nn.InstanceNorm1d(5, affine=True)",
                                        "self.n(x.transpose(1, 2))",
                                        "torch.randn(2, 11, 5)"), 1),
}

PARAMS = [{}, {"BLOCK_O": 1}, {"BLOCK_O": 16, "num_warps": 8}, "h200"]


def render(source: str, params):
    an = local_analysis(source)
    base = staged.default_params(an, "h200" if params == "h200" else "interpreter", "strict")
    return an, staged.render(source, an, base if params == "h200" else {**base, **params})


def kernels(candidate: str) -> list[str]:
    return [k for k in re.findall(r"^def (kh_\w+)\(", candidate, re.M) if k != "kh_expect_shape"]


@pytest.mark.parametrize("variant", range(len(PARAMS)))
@pytest.mark.parametrize("name", sorted(GROUPED))
def test_row_groups_match_the_reference(name, variant, tmp_path):
    source, expected_kernels = GROUPED[name]
    an, candidate = render(source, PARAMS[variant])
    assert any(k.endswith("_rows") for k in kernels(candidate)), kernels(candidate)
    if expected_kernels is not None:
        assert len(kernels(candidate)) == expected_kernels, kernels(candidate)
    for seed in (1, 2):
        expected, got, launched = run_candidate(source, candidate, tmp_path, seed)
        assert any(k.endswith("_rows") for k in launched)
        assert got.shape == expected.shape and got.dtype == expected.dtype
        torch.testing.assert_close(got.double(), expected.double(), atol=1e-5, rtol=1e-5)


def test_the_conv_output_is_loaded_once_for_mean_variance_and_normalisation():
    source = GROUPED["conv_instancenorm_divide"][0]
    an, candidate = render(source, {})
    body = candidate.split("def kh_stage1_rows(")[1].split("\n\n\n")[0]
    conv_buffer = plan(an)[0].sink
    assert body.count(f"tl.load(p{conv_buffer} +") == 1, body
    assert body.count("tl.store(") == 3  # the mean, the rsqrt of the variance, the output


def test_cross_entropy_reads_its_logits_once_and_its_targets_once_a_row():
    source = GROUPED["cross_entropy_mean"][0]
    an, candidate = render(source, "h200")
    body = candidate.split("def kh_stage0_rows(")[1].split("\n\n\n")[0]
    logits, targets = (n.id for n in an.nodes.values() if n.op == "input")
    assert body.count(f"tl.load(p{logits} +") == 1, body
    target_load = [line for line in body.splitlines() if f"tl.load(p{targets} +" in line]
    assert len(target_load) == 1 and "mask=omask[:, None]" in target_load[0], body


def test_a_read_of_another_rows_result_keeps_its_own_stage(tmp_path):
    """The variance around the mean of the *flipped* channel: not the row being computed."""
    source = problem("", "((x - torch.flip(x.mean(2, keepdim=True), [1])) ** 2).mean(2)",
                     "torch.randn(2, 5, 9)")
    an = local_analysis(source)
    assert row_groups(an, plan(an)) == []
    _, candidate = render(source, {})
    assert not any(k.endswith("_rows") for k in kernels(candidate))
    expected, got, _ = run_candidate(source, candidate, tmp_path)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_a_transposed_read_of_the_results_keeps_its_own_stage(tmp_path):
    """Rows (i, j) read the mean of row (j, i): an index op on the way to the result."""
    source = problem("", "((x - x.mean(2, keepdim=True).transpose(0, 1)) ** 2).sum(2)",
                     "torch.randn(3, 3, 9)")
    an = local_analysis(source)
    assert row_groups(an, plan(an)) == []
    _, candidate = render(source, {})
    expected, got, _ = run_candidate(source, candidate, tmp_path)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_rows_longer_than_the_tile_keep_the_streamed_reductions():
    # no row group; the mean and variance are one moments kernel (test_offline_moments.py)
    wide = ROW_GROUP_TILE // 64 + 1  # rows of 2 x wide x 64 elements
    source = problem("self.gn = nn.GroupNorm(2, 4)", "self.gn(x)",
                     f"torch.randn(1, 4, {wide}, 64)")
    an = local_analysis(source)
    assert row_groups(an, plan(an)) == []
    assert [(k.kernel, k.pattern) for k in kernel_plan(an).kernels] == [
        ("kh_stage0_moments", "reduction"), ("kh_stage2_add", "pointwise")]


def test_the_kernel_plan_names_the_row_group_and_what_it_reads_once():
    an = local_analysis(GROUPED["conv_instancenorm_divide"][0])
    conv, rows = kernel_plan(an).kernels
    assert conv.kernel == "kh_stage0_conv" and rows.kernel == "kh_stage1_rows"
    assert rows.pattern == "row reduction" and rows.stores == "the output"
    assert rows.layout == ["3 stages in one kernel over the same rows (conv): read once, "
                           "each row one tile"]


@pytest.fixture
def streamed_rows(monkeypatch):
    """Rows longer than a (shrunk) tile, and enough of them: the groups stream their rows."""
    from search_engine.synthesis.offline.plan import stages

    monkeypatch.setattr(stages, "ROW_GROUP_TILE", 2)
    monkeypatch.setattr(stages, "ROW_GROUP_MIN_ROWS", 1)


@pytest.mark.parametrize("params", [{"BLOCK_R": 16}, {"BLOCK_R": 16, "BLOCK_O": 2}])
@pytest.mark.parametrize("name", sorted(GROUPED))
def test_streamed_row_groups_match_the_reference(name, params, streamed_rows, tmp_path):
    source, expected_kernels = GROUPED[name]
    an, candidate = render(source, params)
    groups = [k for k in kernels(candidate) if k.endswith("_rows")]
    assert len(groups) == len(row_groups(an, plan(an))) > 0
    for kernel, group in zip(groups, row_groups(an, plan(an))):
        body = candidate.split(f"def {kernel}(")[1].split("\n\n\n")[0]
        assert body.count("for r_start0 in range(") == len(group), body  # a pass a stage
    assert all("streamed once per stage" in k.layout[0] for k in kernel_plan(an).kernels
               if k.kernel.endswith("_rows"))
    if expected_kernels is not None:
        assert len(kernels(candidate)) == expected_kernels, kernels(candidate)
    for seed in (1, 2):
        expected, got, _ = run_candidate(source, candidate, tmp_path, seed)
        torch.testing.assert_close(got.double(), expected.double(), atol=1e-5, rtol=1e-5)


def test_few_long_rows_keep_their_own_stages(monkeypatch):
    """Rows past the tile are streamed only when they are many; a few long rows keep the
    stages that can split their reductions over programs."""
    from search_engine.synthesis.offline.plan import stages

    monkeypatch.setattr(stages, "ROW_GROUP_TILE", 2)
    an = local_analysis(GROUPED["groupnorm_affine"][0])  # 9 rows of 70
    assert row_groups(an, plan(an)) == []
    monkeypatch.setattr(stages, "ROW_GROUP_MIN_ROWS", 9)
    assert row_groups(an, plan(an)) != []
