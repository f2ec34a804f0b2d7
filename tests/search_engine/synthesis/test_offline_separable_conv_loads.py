"""The flat K loop of a plain conv (few input channels a group: KernelBench's 3-channel
convs) reads its A and B tiles at separable offsets: a row's input offset once per program,
each K column's once per step, one add per element; only padded dims keep a bounds test.
The direct loop (stencils) likewise, its step's offset a scalar. Transposed convs and
pooled rows keep the general gather's tests."""

from __future__ import annotations

import pytest
import torch

from search_engine.evaluation.integrity.static_checks import run_static_checks
from search_engine.synthesis.offline.writers.conv import DIRECT, FLAT_K

from .conftest import run_candidate
from .test_offline_direct_convs import _render
from .test_offline_staged import problem

PLAIN = {
    "rgb_3d": ("self.conv = nn.Conv3d(3, 20, 3, bias=False)", "self.conv(x)",
               "torch.randn(2, 3, 5, 6, 4)"),
    "rgb_2d_asymmetric_kernel_bias": ("self.conv = nn.Conv2d(3, 24, (3, 5))",
                                      "torch.relu(self.conv(x))", "torch.randn(2, 3, 7, 9)"),
    "padded_strided_dilated": (
        "self.conv = nn.Conv2d(3, 20, (3, 5), stride=(2, 1), padding=(1, 0), dilation=(2, 1))",
        "self.conv(x) * 0.5", "torch.randn(2, 3, 9, 11)"),
    "grouped_1d": ("self.conv = nn.Conv1d(8, 40, 5, groups=2, padding=2)", "self.conv(x)",
                   "torch.randn(3, 8, 13)"),
    "one_image_one_row": ("self.conv = nn.Conv2d(4, 18, (1, 3))", "self.conv(x)",
                          "torch.randn(1, 4, 1, 10)"),
    "one_input_channel": ("self.conv = nn.Conv2d(1, 32, 3, padding=1)", "self.conv(x)",
                          "torch.randn(2, 1, 6, 5)"),
}


@pytest.mark.parametrize("rows_fast", [0, 1])
@pytest.mark.parametrize("name", sorted(PLAIN))
def test_plain_convs_read_separable_offsets_and_match_the_reference(name, rows_fast, tmp_path):
    init, forward, inputs = PLAIN[name]
    source = problem(init, forward, inputs)
    (_, candidate), (_, gpu) = _render(source, CONV_LOOP=FLAT_K, CONV_ROWS_FAST=rows_fast)
    if rows_fast:  # the A tile loaded K x M, then transposed
        for rendered in (candidate, gpu):
            assert "+ row_off[None, :] + k_off[:, None]" in rendered and "tl.trans(" in rendered
        check_candidate(source, candidate, gpu, tmp_path)
        return
    for rendered in (candidate, gpu):
        assert "row_off = " in rendered and "+ row_off[:, None] + k_off[None, :]" in rendered
    loop = candidate[candidate.index("for k_start in"):candidate.index("cmask =")]
    padded = "padding=1" in init or "padding=2" in init or "padding=(1" in init
    assert ("r0[:, None] + q0[None, :] >= 0" in loop) == padded  # bounds only where padded
    check_candidate(source, candidate, gpu, tmp_path)


def check_candidate(source, candidate, gpu, tmp_path):
    """The GPU render passes the static checks; the interpreter's matches the reference."""
    refused = [f"{f.check}: {f.evidence}" for f in run_static_checks(gpu, torch.float32, "strict")
               if f.severity != "warning"]
    assert not refused
    for seed in (1, 2):
        expected, got, launched = run_candidate(source, candidate, tmp_path, seed)
        assert launched
        torch.testing.assert_close(got.double(), expected.double(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("init,forward,inputs", [
    ("self.conv = nn.ConvTranspose2d(3, 20, 3, stride=2, padding=1)", "self.conv(x)",
     "torch.randn(2, 3, 4, 5)"),
    ("self.conv = nn.Conv2d(3, 20, 3)", "F.max_pool2d(self.conv(x), 2)",
     "torch.randn(2, 3, 10, 8)"),
])
def test_transposed_and_pooled_convs_keep_their_tests(init, forward, inputs, tmp_path):
    source = problem(init, forward, inputs)
    (_, candidate), _ = _render(source, CONV_LOOP=FLAT_K)
    loop = candidate[candidate.index("for k_start in"):]
    if "Transpose" in init:  # input = (out + pad - tap) / stride: the general gather
        assert "row_off" not in candidate and "(t0 >= 0) & (t0 % 2 == 0)" in loop
    else:  # a pooled tile's rows: bounds tested though unpadded
        assert "r0[:, None] + q0[None, :] >= 0" in loop
    expected, got, launched = run_candidate(source, candidate, tmp_path)
    assert launched
    torch.testing.assert_close(got.double(), expected.double(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", sorted(PLAIN))
def test_direct_steps_add_one_scalar_offset_to_the_rows(name, tmp_path):
    init, forward, inputs = PLAIN[name]
    source = problem(init, forward, inputs)
    (_, candidate), (_, gpu) = _render(source, CONV_LOOP=DIRECT)
    for rendered in (candidate, gpu):
        assert "tl.dot(" not in rendered and "+ (row_off + tap_off)[:, None]" in rendered
    step = candidate[candidate.index("for kd in"):candidate.index("cmask =")]
    padded = "padding=1" in init or "padding=2" in init or "padding=(1" in init
    assert ("r0[:, None] +" in step) == padded  # bounds only where padded
    check_candidate(source, candidate, gpu, tmp_path)
