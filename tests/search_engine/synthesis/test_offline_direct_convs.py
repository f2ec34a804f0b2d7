"""Convolutions whose MMA tiles would be mostly padding (a group's few output channels, a
short K: depthwise above all) are written as stencils: fp32 FMAs per tap, no tl.dot."""

from __future__ import annotations

import pytest
import torch

from search_engine.evaluation.integrity.static_checks import run_static_checks
from search_engine.synthesis.offline.spaces import staged
from search_engine.synthesis.offline.writers.conv import DIRECT

from .conftest import run_candidate
from .test_offline_staged import local_analysis, problem

STENCILS = {
    "depthwise_3x3": ("self.conv = nn.Conv2d(8, 8, 3, groups=8, bias=False)", "self.conv(x)",
                      "torch.randn(2, 8, 9, 7)"),
    "depthwise_multiplier_padded_strided": (
        "self.conv = nn.Conv2d(4, 8, (3, 5), stride=(2, 1), padding=(1, 2), dilation=(1, 2), "
        "groups=4)", "torch.relu(self.conv(x)) * 2.0", "torch.randn(2, 4, 9, 11)"),
    "depthwise_1d": ("self.conv = nn.Conv1d(6, 6, 7, padding=3, groups=6)",
                     "self.conv(x) + 1.0", "torch.randn(3, 6, 20)"),
    "depthwise_3d": ("self.conv = nn.Conv3d(4, 4, 3, padding=1, groups=4)", "self.conv(x)",
                     "torch.randn(2, 4, 3, 5, 4)"),
    "depthwise_transposed_strided": (
        "self.conv = nn.ConvTranspose2d(4, 4, 3, stride=2, padding=1, output_padding=1, "
        "groups=4)", "torch.tanh(self.conv(x))", "torch.randn(2, 4, 5, 3)"),
    "few_outputs_few_inputs": ("self.conv = nn.Conv2d(3, 2, 3)", "self.conv(x)",
                               "torch.randn(2, 3, 6, 6)"),
    # the separable pair: the depthwise stencil, then a pointwise conv on tensor cores
    "separable": ("self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16, bias=False)\n"
                  "self.pw = nn.Conv2d(16, 16, 1, bias=False)",
                  "self.pw(self.dw(x))", "torch.randn(2, 16, 6, 5)"),
    # few input channels (the flat loop's gather) and one MMA tile of outputs: K = 81 rolled
    "rgb_to_16_3d": ("self.conv = nn.Conv3d(3, 16, 3)", "torch.sigmoid(self.conv(x))",
                     "torch.randn(2, 3, 4, 5, 4)"),
    # a pool whose windows tile the stencil's output, in the same kernel
    "depthwise_then_max_pool": ("self.conv = nn.Conv2d(4, 4, 3, groups=4)",
                                "F.max_pool2d(self.conv(x), 2)", "torch.randn(2, 4, 10, 8)"),
}


def _render(source, **overlay):
    an = local_analysis(source)
    for target in ("interpreter", "h200"):
        params = {**staged.default_params(an, target, "strict"), **overlay}
        yield target, staged.render(source, an, params)


@pytest.mark.parametrize("name", sorted(STENCILS))
def test_stencil_convs_are_direct_and_match_the_reference(name, tmp_path):
    source = problem(*STENCILS[name])
    (_, candidate), (_, gpu) = _render(source)
    conv = candidate[candidate.index("for kd in"):]
    conv = conv[:conv.index("cmask =")]
    assert "tl.dot" not in conv and "acc += " in conv
    if name != "rgb_to_16_3d":
        assert "for kd in tl.static_range(" in gpu  # a short K unrolled
    if name == "separable":  # the pointwise half keeps its MMA
        assert candidate.count("tl.dot(") == 1
    refused = [f"{f.check}: {f.evidence}" for f in run_static_checks(gpu, torch.float32, "strict")
               if f.severity != "warning"]
    assert not refused
    expected, got, launched = run_candidate(source, candidate, tmp_path)
    assert launched
    torch.testing.assert_close(got.double(), expected.double(), atol=1e-5, rtol=1e-5)


def test_the_direct_rows_are_a_pointwise_block_wide():
    source = problem(*STENCILS["depthwise_3x3"])
    _, (_, gpu) = _render(source, BLOCK=512)
    assert "BLOCK_M=64, BLOCK_N=1" in gpu  # 9x7 = 63 output positions an image
    big = problem("self.conv = nn.Conv2d(8, 8, 3, groups=8, bias=False)", "self.conv(x)",
                  "torch.randn(4, 8, 40, 40)")
    _, (_, gpu) = _render(big, BLOCK=512)
    assert "BLOCK_M=512, BLOCK_N=1" in gpu


@pytest.mark.parametrize("init,inputs", [
    ("self.conv = nn.Conv2d(16, 32, 3)", "torch.randn(2, 16, 6, 6)"),  # a dense conv
    ("self.conv = nn.Conv2d(1, 32, 3)", "torch.randn(2, 1, 6, 6)"),  # 32 outputs fill N
    ("self.conv = nn.Conv2d(16, 4, 5)", "torch.randn(2, 16, 6, 6)"),  # K = 400: long
])
def test_convs_that_fill_an_mma_keep_it(init, inputs):
    source = problem(init, "self.conv(x)", inputs)
    for _, candidate in _render(source):
        assert "tl.dot(" in candidate and "for kd in" not in candidate


def test_the_space_may_ask_any_conv_for_the_direct_loop(tmp_path):
    source = problem("self.conv = nn.Conv2d(16, 20, 3, padding=1)", "torch.relu(self.conv(x))",
                     "torch.randn(2, 16, 5, 4)")
    (_, candidate), _ = _render(source, CONV_LOOP=DIRECT)
    assert "tl.dot(" not in candidate and "for kd in range(144):" in candidate  # K 144: rolled
    expected, got, _ = run_candidate(source, candidate, tmp_path)
    torch.testing.assert_close(got.double(), expected.double(), atol=1e-5, rtol=1e-5)


def test_direct_convs_default_to_the_measured_block_on_a_gpu():
    depthwise = local_analysis(problem(*STENCILS["depthwise_3x3"]))
    assert staged.default_params(depthwise, "h200", "strict")["BLOCK"] == \
        staged.NARROW_STENCIL_GPU_BLOCK == 512
    dense = local_analysis(problem("self.conv = nn.Conv2d(16, 32, 3)", "self.conv(x)",
                                   "torch.randn(2, 16, 6, 6)"))
    assert staged.default_params(dense, "h200", "strict")["BLOCK"] == 1024
    # a separable pair keeps the pointwise default: its second conv is an MMA's
    separable = local_analysis(problem(*STENCILS["separable"]))
    assert staged.default_params(separable, "h200", "strict")["BLOCK"] == 1024
