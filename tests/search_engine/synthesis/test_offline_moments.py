"""A mean and the variance around it over long rows (a GroupNorm's or BatchNorm's
statistics, a hand-written variance) are one kernel reading the elements once: Welford per
lane, Chan's merge across lanes and split programs. Rows short enough for a row group keep
it, and a second reduction that is not the deviations from that mean keeps its stage."""

from __future__ import annotations

import pytest
import torch

from search_engine.evaluation.integrity.static_checks import run_static_checks
from search_engine.synthesis.offline.plan.stages import moment_pairs, plan
from search_engine.synthesis.offline.spaces import staged

from .conftest import run_candidate
from .test_offline_staged import local_analysis, problem

LONG_ROWS = {
    # groups of 2 x 5120 elements: longer than a row group's tile, too few to stream
    "group_norm": ("self.norm = nn.GroupNorm(2, 4)", "self.norm(x)", "torch.randn(2, 4, 64, 80)"),
    # statistics over the batch and the spatial dims, a channel's elements strided
    "batch_norm_train": ("self.w = nn.Parameter(torch.rand(3) + 0.5)\n"
                         "self.b = nn.Parameter(torch.randn(3))",
                         "F.batch_norm(x, None, None, self.w, self.b, training=True)",
                         "torch.randn(4, 3, 40, 70) * 3.0 + 5.0"),
    # written out: the squared deviations as a product, the variance unbiased
    "hand_written_var": ("", "(lambda d: d / torch.sqrt((d * d).sum(dim=1, keepdim=True) / "
                         "12287 + 1e-5))(x - x.mean(dim=1, keepdim=True))",
                         "torch.randn(3, 12288) + 100.0"),
    "pow_deviation": ("", "((x - x.mean(dim=(1, 2), keepdim=True)) ** 2).mean(dim=(1, 2))",
                      "torch.rand(2, 96, 120)"),
}


def _params(source, **overlay):
    an = local_analysis(source)
    return an, {**staged.default_params(an, "interpreter", "strict"), **overlay}


@pytest.mark.parametrize("split", [1, 64])
@pytest.mark.parametrize("name", sorted(LONG_ROWS))
def test_mean_and_variance_are_one_read(name, split, tmp_path):
    source = problem(*LONG_ROWS[name])
    an, params = _params(source, SPLIT_R=split)
    stages = plan(an)
    assert len(moment_pairs(an, stages, set())) == 1
    candidate = staged.render(source, an, params)
    assert "_moments" in candidate and "_kh_welford" in candidate
    assert ("_moments_partial" in candidate) == (split > 1)
    refused = [f"{f.check}: {f.evidence}" for f in run_static_checks(candidate, torch.float32,
                                                                     "strict")
               if f.severity != "warning"]
    assert not refused
    expected, got, launched = run_candidate(source, candidate, tmp_path)
    assert launched
    torch.testing.assert_close(got.double(), expected.double(), atol=1e-4, rtol=1e-4)


def test_an_offset_far_from_zero_keeps_the_variance_exact(tmp_path):
    # data at 1e4 with unit spread: sum of squares minus the squared mean would lose every
    # digit in fp32; Welford's deviations do not
    source = problem("", "x.var(dim=1, unbiased=False)", "torch.randn(2, 16384) + 1e4")
    an, params = _params(source, SPLIT_R=16)
    candidate = staged.render(source, an, params)
    assert "_kh_welford" in candidate
    expected, got, _ = run_candidate(source, candidate, tmp_path)
    torch.testing.assert_close(got.double(), expected.double(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("forward,inputs,args", [
    # short rows: the row group holds each row already
    ("(x - x.mean(dim=1, keepdim=True)) / x.std(dim=1, keepdim=True)", "torch.randn(8, 64)",
     "x"),
    # the second reduction is over the deviations' absolute values, not their squares
    ("torch.abs(x - x.mean(dim=1, keepdim=True)).sum(dim=1)", "torch.randn(2, 12288)", "x"),
    # squared deviations from another tensor's mean
    ("((x - y.mean(dim=1, keepdim=True)) ** 2).sum(dim=1)",
     "torch.randn(2, 12288), torch.randn(2, 12288)", "x, y"),
    # squared deviations from a mean over other dims
    ("((x - x.mean(dim=2, keepdim=True)) ** 2).sum(dim=(1, 2))", "torch.randn(2, 96, 128)",
     "x"),
])
def test_other_reductions_keep_their_stages(forward, inputs, args):
    source = problem("", forward, inputs, args)
    an, params = _params(source)
    assert "_kh_welford" not in staged.render(source, an, params)


def test_the_kernel_plan_names_the_one_moments_kernel():
    from search_engine.synthesis.offline.plan.kernel_plan import kernel_plan

    source = problem(*LONG_ROWS["group_norm"])
    an, params = _params(source)
    names = [k.kernel for k in kernel_plan(an).kernels]
    candidate = staged.render(source, an, params)
    assert names == ["kh_stage0_moments", "kh_stage2_add"]
    assert all(f"{name}[" in candidate for name in names)
