"""Convolution and pooling variants beyond the staged suite write correct kernels:
``padding='same'`` (even kernels pad the odd one on the right), non-zero ``padding_mode``
and ``F.pad`` (an index op read through), adaptive pooling whose windows differ in size
or keep a dim (``None``), LP pooling, nearest upsampling and pixel (un)shuffle.
In-process against the reference, tiny shapes."""

from __future__ import annotations

import pytest

from search_engine.synthesis.base import NotCoveredError

from . import test_offline_staged as staged_suite
from .test_offline_staged import local_analysis, problem

CASES = {
    "conv1d_same_even_kernel": problem("self.c = nn.Conv1d(3, 4, 4, padding='same')",
                                       "self.c(x)", "torch.randn(2, 3, 13)"),
    "conv2d_same_dilated": problem(
        "self.c = nn.Conv2d(3, 4, (3, 4), padding='same', dilation=(2, 1))", "self.c(x)",
        "torch.randn(2, 3, 9, 10)"),
    "f_conv2d_same": problem("self.w = nn.Parameter(torch.randn(4, 3, 3, 3))",
                             "F.conv2d(x, self.w, padding='same')", "torch.randn(2, 3, 6, 7)"),
    "conv_reflect": problem("self.c = nn.Conv2d(3, 4, 3, padding=1, padding_mode='reflect')",
                            "self.c(x)", "torch.randn(2, 3, 6, 7)"),
    "conv_circular_1d": problem(
        "self.c = nn.Conv1d(3, 4, 3, padding=2, padding_mode='circular')", "self.c(x)",
        "torch.randn(2, 3, 9)"),
    "conv_replicate_3d": problem(
        "self.c = nn.Conv3d(2, 3, 3, padding=1, padding_mode='replicate')", "self.c(x)",
        "torch.randn(1, 2, 4, 5, 3)"),
    "conv_same_reflect_even": problem(
        "self.c = nn.Conv2d(3, 4, (4, 3), padding='same', padding_mode='reflect')",
        "self.c(x)", "torch.randn(2, 3, 6, 7)"),
    "f_pad_then_conv": problem("self.c = nn.Conv2d(3, 4, 3)", "self.c(F.pad(x, (1, 2, 0, 1)))",
                               "torch.randn(2, 3, 6, 7)"),
    "f_pad_reflect": problem("", "F.pad(x, (2, 1, 1, 2), mode='reflect') * 2.0",
                             "torch.randn(2, 3, 5, 6)"),
    "f_pad_value": problem("", "F.pad(x, (1, 1), value=0.5)", "torch.randn(2, 3, 5)"),
    "f_pad_replicate_pool": problem(
        "", "F.max_pool2d(F.pad(x, (1, 0, 0, 1), mode='replicate'), 2)",
        "torch.randn(2, 3, 5, 6)"),
    "adaptive_avg_uneven": problem("self.p = nn.AdaptiveAvgPool2d((3, 4))", "self.p(x)",
                                   "torch.randn(2, 3, 7, 9)"),
    "adaptive_max_uneven": problem("self.p = nn.AdaptiveMaxPool1d(4)", "self.p(x)",
                                   "torch.randn(2, 3, 10)"),
    "adaptive_avg_keep_dim": problem("self.p = nn.AdaptiveAvgPool3d((None, 2, 2))", "self.p(x)",
                                     "torch.randn(1, 2, 3, 4, 6)"),
    "lppool2d_after_conv": problem("self.c = nn.Conv2d(3, 4, 3)\nself.p = nn.LPPool2d(3, (2, 3))",
                                   "self.p(torch.sigmoid(self.c(x)))", "torch.randn(2, 3, 7, 8)"),
    "f_lp_pool1d_ceil": problem("", "F.lp_pool1d(x, 2.0, 3, stride=2, ceil_mode=True)",
                                "torch.rand(2, 3, 10)"),
    "upsample_nearest_conv": problem(
        "self.u = nn.Upsample(scale_factor=2)\nself.c = nn.Conv2d(3, 4, 3, padding=1)",
        "self.c(self.u(x))", "torch.randn(2, 3, 4, 5)"),
    "interpolate_size_3d": problem("", "F.interpolate(x, size=(4, 6, 3), mode='nearest') + 1.0",
                                   "torch.randn(1, 2, 2, 3, 3)"),
    "pixel_shuffle_conv": problem("self.c = nn.Conv2d(3, 8, 3, padding=1)\n"
                                  "self.ps = nn.PixelShuffle(2)", "self.ps(self.c(x))",
                                  "torch.randn(2, 3, 4, 5)"),
    "pixel_unshuffle": problem("self.ps = nn.PixelUnshuffle(2)", "torch.sigmoid(self.ps(x))",
                               "torch.randn(2, 3, 6, 4)"),
}


@pytest.mark.parametrize("variant", range(len(staged_suite.VARIANTS)))
@pytest.mark.parametrize("name", sorted(CASES))
def test_conv_and_pool_variants_match_the_reference(name, variant, tmp_path, monkeypatch):
    """The staged suite's check (defaults, explicit tiles, h200; two seeds) on these cases."""
    monkeypatch.setitem(staged_suite.CASES, name, CASES[name])
    staged_suite.test_staged_kernels_match_the_reference(name, variant, tmp_path)


def test_crops_wide_reflections_and_weighted_resampling_are_refused():
    for forward in ("F.pad(x, (-1, 1))", "F.pad(x, (3, 0), mode='circular')",
                    "F.interpolate(x, scale_factor=2, mode='linear')"):
        with pytest.raises(NotCoveredError):
            local_analysis(problem("", forward, "torch.randn(2, 3, 2)"))
