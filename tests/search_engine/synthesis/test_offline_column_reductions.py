"""A staged reduction whose loads walk memory along its outputs (a sum over a matrix's rows,
a mean over the batch, a weight's column sums) turns its tile so a warp's lanes read
neighbouring outputs; one that walks along the reduced elements keeps the rows tile. The
choice follows the loads the stage writes, not the reduced dims' positions: a transposed
operand's reduction over dim 0 reads along the reduced elements."""

from __future__ import annotations

import pytest
import torch

from search_engine.synthesis.offline.spaces import staged
from search_engine.synthesis.offline.writers import staged_writers

from .conftest import run_candidate
from .test_offline_staged import local_analysis, problem

COLUMNS_TILE = "acc_t = tl.full([BLOCK_R, BLOCK_O]"
ROWS_TILE = "acc_t = tl.full([BLOCK_O, BLOCK_R]"

ALONG_OUTPUTS = {
    "sum_over_rows": problem("", "torch.sum(x, dim=0) * 2.0", "torch.randn(37, 45)"),
    "mean_over_middle": problem("", "torch.mean(x, dim=1, keepdim=True) - 1.0",
                                "torch.randn(3, 29, 40)"),
    "max_over_batch": problem("", "torch.amax(x, dim=(0, 1))", "torch.randn(3, 5, 6, 7)"),
    "prod_over_rows": problem("", "torch.prod(x * 0.1 + 1.0, dim=0)", "torch.randn(19, 33)"),
    "argmin_over_rows": problem("", "torch.argmin(x, dim=0)", "torch.randn(41, 20)"),
    # ties everywhere: the first index of the best value, as torch returns
    "argmax_ties_over_rows": problem("", "torch.argmax(torch.floor(x), dim=0)",
                                     "torch.randn(67, 24)"),
    # the algebra pass: sum_j (x W^T)_ij needs W's column sums (L2 14's pattern)
    "linear_summed": problem("self.fc = nn.Linear(40, 48)",
                             "torch.sum(self.fc(x) / 2.0, dim=1, keepdim=True) * 1.5",
                             "torch.randn(16, 40)"),
    # a conv's output averaged over the batch, after the conv's own kernel
    "conv_batch_mean": problem("self.c = nn.Conv2d(3, 8, 3)", "self.c(x).mean(dim=0)",
                               "torch.randn(4, 3, 10, 10)"),
}

ALONG_REDUCED = {
    "sum_over_columns": problem("", "torch.sum(x, dim=1)", "torch.randn(37, 45)"),
    # dim 0 of a transposed matrix is memory's innermost dim: the rows tile
    "transposed_sum_over_dim0": problem("", "torch.sum(x.t(), dim=0)", "torch.randn(37, 45)"),
}

# the GPU's wide defaults, a split over the reduced rows, and small tiles (masks everywhere)
PARAMS = {"default": {}, "split": {"SPLIT_R": 1024, "BLOCK_R": 16},
          "small": {"BLOCK_R": 16, "BLOCK_O": 2}}


@pytest.fixture(autouse=True)
def _small_reductions_count(monkeypatch):
    """The tests' reductions are tiny: let them take the columns tile as large ones do."""
    monkeypatch.setattr(staged_writers, "MIN_COLUMNS_ELEMENTS", 1)


def _render(source: str, extra: dict) -> str:
    an = local_analysis(source)
    params = {**staged.default_params(an, "interpreter", "strict"), **extra}
    return staged.render(source, an, params)


@pytest.mark.parametrize("params", list(PARAMS))
@pytest.mark.parametrize("name", list(ALONG_OUTPUTS))
def test_reductions_along_their_outputs_turn_the_tile_and_stay_exact(name, params, tmp_path):
    source = ALONG_OUTPUTS[name]
    candidate = _render(source, PARAMS[params])
    assert COLUMNS_TILE in candidate
    expected, got, _ = run_candidate(source, candidate, tmp_path)
    if expected.dtype == torch.int64:
        assert torch.equal(got, expected)
    else:
        torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)


def test_a_split_column_reduction_reads_whole_rows_of_outputs_a_program():
    big = problem("", "torch.sum(x, dim=0)", "torch.randn(8192, 8192)")
    an = local_analysis(big)
    candidate = staged.render(big, an, staged.default_params(an, "h200", "strict"))
    assert COLUMNS_TILE in candidate and "acc = tl.sum(acc_t, axis=0)" in candidate
    # 256 neighbouring outputs a program, 16 rows a step, the rows split over 32 programs
    assert "BLOCK_O=256, BLOCK_R=16, SPLIT=32" in candidate


@pytest.mark.parametrize("name", list(ALONG_REDUCED))
def test_reductions_along_the_reduced_elements_keep_the_rows_tile(name, tmp_path):
    source = ALONG_REDUCED[name]
    candidate = _render(source, {})
    assert ROWS_TILE in candidate and COLUMNS_TILE not in candidate
    expected, got, _ = run_candidate(source, candidate, tmp_path)
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)


def test_a_small_reduction_keeps_the_rows_tile_and_its_many_programs(monkeypatch):
    """Under MIN_COLUMNS_ELEMENTS read, the rows tile's programs (one per 4 outputs) win."""
    monkeypatch.undo()
    small = problem("", "torch.sum(x, dim=0)", "torch.randn(64, 864)")
    large = problem("", "torch.sum(x, dim=0)", "torch.randn(2048, 864)")
    for source, tile in ((small, ROWS_TILE), (large, COLUMNS_TILE)):
        an = local_analysis(source)
        assert tile in staged.render(source, an, staged.default_params(an, "h200", "strict"))
