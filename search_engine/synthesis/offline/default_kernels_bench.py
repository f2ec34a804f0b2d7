"""The offline synthesizer's default kernels (and a few neighbours) on the suite's official
shapes, timed against torch eager and torch.compile on a GPU.

Two steps, so the GPU machine needs only torch, triton and numpy:

    # on any machine with the project (CPU is enough): render the candidates to JSON
    python -m search_engine.synthesis.offline.default_kernels_bench render
    # on the GPU: time them (a plain file run: nothing from the project is imported)
    python search_engine/synthesis/offline/default_kernels_bench.py time \
        [--only softmax,layernorm] [--labels default,default_i32] [--no-compile] \
        [--kernel-times] [--out results.json]

With `--precision tf32` (both steps) the GEMMs' and convolutions' kernels are rendered under
the tf32 policy into their own JSON, and eager and compile run with TF32 on.

Every candidate is checked on the GPU before it is timed: relative L2 error against an
fp64 reference (fp32 eager's own error is printed beside it), so a fast wrong kernel shows.
Times are medians of `triton.testing.do_bench` (L2 flushed between runs). Beside each
default stand its neighbours (other parameters) and two experiments that are not templates:
`default_i32` (every index in 32 bits), `*_unrolled` (constant-trip loops unrolled),
`*_evict_last` (a pool's window loads kept in L2), `*_ldpoll` (the coop wait polls with
loads) and `*_ws` (a GEMM's K loop warp-specialized by Triton).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
import tempfile
import time
from pathlib import Path

KERNELS_JSON = Path(__file__).with_name("default_kernels_h200.json")
# the same problems' dot kernels under the tf32 policy (render/time --precision tf32)
KERNELS_JSON_TF32 = Path(__file__).with_name("default_kernels_h200_tf32.json")
# the evaluator's relative L2 tolerance per policy (search_engine.evaluation.tolerances)
REL_NORM = {"strict": 1e-5, "tf32": 2e-3}


def _conv_flops(batch, c_out, c_in_per_group, taps, spatial) -> int:
    """Multiply-adds of a convolution (for a transposed one: `spatial` is its input's)."""
    count = 2 * batch * c_out * c_in_per_group
    for size in (*taps, *spatial):
        count *= size
    return count


def _recurrent_flops(steps, batch, inputs, hidden, layers, gates, directions) -> int:
    """Multiply-adds of an RNN's input and hidden projections, every layer and direction."""
    count = 0
    for layer in range(layers):
        width = inputs if layer == 0 else hidden * directions
        count += 2 * steps * batch * gates * hidden * (width + hidden) * directions
    return count


def _problem(forward: str, inputs: str, init: str = "", args: str = "x") -> str:
    init_lines = "".join(f"        {line}\n" for line in init.splitlines())
    return ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
            "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            f"{init_lines}    def forward(self, {args}):\n        return {forward}\n\n"
            f"def get_inputs():\n    return [{inputs}]\n\n"
            "def get_init_inputs():\n    return []\n")


# name -> (problem source, minimal bytes moved or FLOPs, "bytes" | "flops")
PROBLEMS = {
    "softmax": (_problem("torch.softmax(x, dim=1)", "torch.randn(4096, 393216)"),
                2 * 4096 * 393216 * 4, "bytes"),
    "log_softmax": (_problem("torch.log_softmax(x, dim=1)", "torch.randn(4096, 393216)"),
                    2 * 4096 * 393216 * 4, "bytes"),
    "layernorm": (_problem("self.ln(x)", "torch.randn(16, 64, 256, 256)",
                           "self.ln = nn.LayerNorm((64, 256, 256))"),
                  2 * 16 * 64 * 256 * 256 * 4, "bytes"),
    "rmsnorm": (_problem("x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)",
                         "torch.randn(112, 64, 512, 512)"),
                2 * 112 * 64 * 512 * 512 * 4, "bytes"),
    # RMSNorm over a whole 4M-element row (16 rows, like LayerNorm's): the split-row design
    "rmsnorm_wide": (_problem("x / torch.sqrt(torch.mean(x ** 2, dim=(1, 2, 3), keepdim=True)"
                              " + 1e-5)", "torch.randn(16, 64, 256, 256)"),
                     2 * 16 * 64 * 256 * 256 * 4, "bytes"),
    "gelu_mingpt": (_problem("0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * "
                             "(x + 0.044715 * torch.pow(x, 3.0))))",
                             "torch.randn(8192, 8192)"),
                    2 * 8192 * 8192 * 4, "bytes"),
    # the rest of the memory-bound group (issue 31) at KernelBench-like official shapes
    "softplus": (_problem("torch.nn.functional.softplus(x)", "torch.randn(4096, 393216)"),
                 2 * 4096 * 393216 * 4, "bytes"),
    "frobenius": (_problem("x / torch.norm(x, p='fro')", "torch.randn(112, 64, 512, 512)"),
                  2 * 112 * 64 * 512 * 512 * 4, "bytes"),
    "sum_dim": (_problem("torch.sum(x, dim=1, keepdim=True)", "torch.randn(128, 4096, 4095)"),
                (128 * 4096 * 4095 + 128 * 4095) * 4, "bytes"),
    "mse": (_problem("torch.mean((a - b) ** 2)",
                     "torch.rand(32768, 32768), torch.rand(32768, 32768)", args="a, b"),
            2 * 32768 * 32768 * 4, "bytes"),
    "cross_entropy": (_problem("torch.nn.functional.cross_entropy(x, t)",
                               "torch.randn(32768, 4096), torch.randint(0, 4096, (32768,))",
                               args="x, t"), 32768 * 4096 * 4 + 32768 * 8, "bytes"),
    "max_pool2d": (_problem("self.pool(x)", "torch.randn(32, 64, 512, 512)",
                            "self.pool = nn.MaxPool2d(4, stride=2, padding=1)"),
                   32 * 64 * (512 * 512 + 256 * 256) * 4, "bytes"),
    "avg_pool1d": (_problem("self.pool(x)", "torch.randn(64, 128, 65536)",
                            "self.pool = nn.AvgPool1d(8, stride=1, padding=4)"),
                   64 * 128 * (65536 + 65537) * 4, "bytes"),
    "avg_pool2d": (_problem("self.pool(x)", "torch.randn(16, 64, 2048, 2048)",
                            "self.pool = nn.AvgPool2d(11)"),
                   16 * 64 * (2048 * 2048 + 186 * 186) * 4, "bytes"),
    # losses, row norms, scans, arg-reductions and 1-D/3-D pools at KernelBench-like sizes
    "huber": (_problem("torch.nn.functional.smooth_l1_loss(a, b)",
                       "torch.randn(32768, 32768), torch.randn(32768, 32768)", args="a, b"),
              2 * 32768 * 32768 * 4, "bytes"),
    "hinge": (_problem("torch.mean(torch.clamp(1 - a * t, min=0))",
                       "torch.randn(32768, 32768), torch.randint(0, 2, (32768,)).float() * 2 - 1",
                       args="a, t"), (32768 * 32768 + 32768) * 4, "bytes"),
    "kl_div": (_problem("torch.nn.functional.kl_div(torch.log(p), q, reduction='batchmean')",
                        "torch.randn(8192, 8192).softmax(dim=-1), "
                        "torch.randn(8192, 8192).softmax(dim=-1)", args="p, q"),
               2 * 8192 * 8192 * 4, "bytes"),
    "l1_norm": (_problem("x / torch.sum(torch.abs(x), dim=1, keepdim=True)",
                         "torch.randn(16384, 65536)"), 2 * 16384 * 65536 * 4, "bytes"),
    "l2_norm": (_problem("x / torch.norm(x, p=2, dim=1, keepdim=True)",
                         "torch.randn(16384, 65536)"), 2 * 16384 * 65536 * 4, "bytes"),
    "cumsum": (_problem("torch.cumsum(x, dim=1)", "torch.randn(32768, 32768)"),
               2 * 32768 * 32768 * 4, "bytes"),
    "argmax_dim": (_problem("torch.argmax(x, dim=1)", "torch.randn(128, 4096, 4095)"),
                   128 * 4096 * 4095 * 4 + 128 * 4095 * 8, "bytes"),
    "max_dim": (_problem("torch.max(x, dim=1)[0]", "torch.randn(128, 4096, 4095)"),
                (128 * 4096 * 4095 + 128 * 4095) * 4, "bytes"),
    "max_pool1d": (_problem("self.pool(x)", "torch.randn(64, 192, 65536)",
                            "self.pool = nn.MaxPool1d(8, stride=1, padding=4, dilation=3)"),
                   64 * 192 * (65536 + 65523) * 4, "bytes"),
    "max_pool3d": (_problem("self.pool(x)", "torch.randn(16, 32, 128, 128, 128)",
                            "self.pool = nn.MaxPool3d(3, stride=2, padding=1, dilation=3)"),
                   16 * 32 * (128 ** 3 + 62 ** 3) * 4, "bytes"),
    "avg_pool3d": (_problem("self.pool(x)", "torch.randn(16, 32, 128, 128, 256)",
                            "self.pool = nn.AvgPool3d(3, stride=2, padding=1)"),
                   16 * 32 * (128 * 128 * 256 + 64 * 64 * 128) * 4, "bytes"),
    "matmul": (_problem("torch.matmul(a, b)", "torch.randn(4096, 4096), torch.randn(4096, 4096)",
                        args="a, b"), 2 * 4096 ** 3, "flops"),
    "gemm_bias_relu": (_problem("torch.relu(self.gemm(x) + self.bias)",
                                "torch.randn(1024, 8192)",
                                "self.gemm = nn.Linear(8192, 8192, bias=False)\n"
                                "self.bias = nn.Parameter(torch.randn(8192))"),
                       2 * 1024 * 8192 * 8192, "flops"),
    # convolutions (issue 30): implicit GEMM, strict fp32 (cuDNN's tf32 off in the baselines)
    "conv2d_3x3": (_problem("self.conv(x)", "torch.randn(16, 64, 256, 256)",
                            "self.conv = nn.Conv2d(64, 128, 3)"),
                   _conv_flops(16, 128, 64, (3, 3), (254, 254)), "flops"),
    "conv2d_dilated": (_problem("self.conv(x)", "torch.randn(8, 32, 256, 256)",
                                "self.conv = nn.Conv2d(32, 64, (3, 5), padding=(2, 4), "
                                "dilation=(2, 2))"),
                       _conv_flops(8, 64, 32, (3, 5), (256, 256)), "flops"),
    "conv3d_relu": (_problem("torch.relu(self.conv(x))", "torch.randn(8, 32, 16, 64, 64)",
                             "self.conv = nn.Conv3d(32, 64, 3, padding=1)"),
                    _conv_flops(8, 64, 32, (3, 3, 3), (16, 64, 64)), "flops"),
    "conv_transpose2d": (_problem("self.deconv(x)", "torch.randn(16, 64, 128, 128)",
                                  "self.deconv = nn.ConvTranspose2d(64, 32, 4, stride=2, "
                                  "padding=1)"),
                         _conv_flops(16, 32, 64, (4, 4), (128, 128)), "flops"),
    "conv_transpose3d": (_problem("self.deconv(x)", "torch.randn(8, 32, 16, 32, 32)",
                                  "self.deconv = nn.ConvTranspose3d(32, 32, 3, stride=2, "
                                  "padding=1, output_padding=1)"),
                         _conv_flops(8, 32, 32, (3, 3, 3), (16, 32, 32)), "flops"),
    # epilogues that read the conv's value twice (`y * f(y)`): fused into the conv's kernel
    # since 2026-12-07, where a second kernel read y back (KernelBench L2 57's shape)
    "conv2d_relu_hardswish": (_problem("(lambda y: y * torch.clamp((y + 3) / 6, 0, 1))"
                                       "(torch.relu(self.conv(x)))",
                                       "torch.rand(128, 8, 128, 128)",
                                       "self.conv = nn.Conv2d(8, 64, 3)"),
                              _conv_flops(128, 64, 8, (3, 3), (126, 126)), "flops"),
    "conv_transpose3d_add_hardswish": (
        _problem("(lambda y: y * F.hardswish(y))(self.deconv(x) + a)",
                 "torch.randn(8, 32, 16, 32, 32), torch.randn(8, 32, 32, 64, 64)",
                 "self.deconv = nn.ConvTranspose3d(32, 32, 3, stride=2, padding=1, "
                 "output_padding=1)", args="x, a"),
        _conv_flops(8, 32, 32, (3, 3, 3), (16, 32, 32)), "flops"),
    # a sum over a GEMM's output columns (KernelBench L2 14 and 51's shapes): since
    # 2026-12-07 the plan multiplies x by the weight's column sums, no GEMM (plan/algebra.py);
    # the floor is reading the weight and x once
    "gemm_divide_sum_scaling": (
        _problem("torch.sum(torch.matmul(x, self.weight.T) / 2, dim=1, keepdim=True) * 1.5",
                 "torch.randn(1024, 8192)",
                 "self.weight = nn.Parameter(torch.randn(8192, 8192))"),
        4 * (8192 * 8192 + 1024 * 8192 + 1024), "bytes"),
    # an average pool over a GEMM's columns (KernelBench L2 98's pattern): a GEMM 16 times
    # narrower over window-summed weights (plan/algebra.py); work is the reference GEMM's
    "gemm_avgpool_gelu_scale_max": (
        _problem("torch.max(F.gelu(self.pool(self.gemm(x).unsqueeze(1)).squeeze(1)) * 2.0, "
                 "dim=1).values", "torch.randn(1024, 8192)",
                 "self.gemm = nn.Linear(8192, 8192)\nself.pool = nn.AvgPool1d(16)"),
        2 * 1024 * 8192 * 8192, "flops"),
    "gemm_subtract_mean_lse_gelu_residual": (
        _problem("F.gelu(torch.logsumexp(torch.mean(self.gemm(x) - self.subtract, dim=1, "
                 "keepdim=True), dim=1, keepdim=True)) + x", "torch.randn(2048, 8192)",
                 "self.gemm = nn.Linear(8192, 8192)\n"
                 "self.subtract = nn.Parameter(torch.randn(8192))"),
        4 * (8192 * 8192 + 2 * 2 * 2048 * 8192), "bytes"),
    # a channel mean of a transposed conv (KernelBench L2 13's pattern): one output channel
    # whose filter sums the 64 (plan/algebra.py); work is the reference conv's FLOPs
    "conv_transpose3d_mean_softmax": (
        _problem("torch.tanh(torch.softmax(torch.mean(self.deconv(x), dim=1, keepdim=True) "
                 "+ self.bias, dim=1)) * 2.0", "torch.randn(16, 32, 16, 32, 32)",
                 "self.deconv = nn.ConvTranspose3d(32, 64, 3, stride=2, padding=1, "
                 "output_padding=1)\nself.bias = nn.Parameter(torch.randn(1, 1, 1, 1, 1))"),
        _conv_flops(16, 64, 32, (3, 3, 3), (16, 32, 32)), "flops"),
    # a pool whose windows tile the conv's output (KernelBench L2 35's pattern): since
    # 2026-12-07 in the conv's kernel, which stores the pooled tensor only (plan.fused_pool)
    "conv2d_hardswish_maxpool_mish": (
        _problem("F.mish(F.max_pool2d(F.hardswish(self.conv(x) - 0.5), 2))",
                 "torch.randn(64, 32, 128, 128)", "self.conv = nn.Conv2d(32, 64, 3)"),
        _conv_flops(64, 64, 32, (3, 3), (126, 126)), "flops"),
    # KernelBench's other level-1 families and its common level-2 chains at official-like
    # sizes (2026-12-07): depthwise, pointwise, 1-D, grouped and 3-channel convs, batched,
    # transposed and skinny GEMMs, the norms with statistics per instance, group or batch,
    # scans, a triplet loss, attention, and GEMM/conv chains ending in a norm
    "conv_depthwise2d": (_problem("self.conv(x)", "torch.randn(16, 64, 512, 512)",
                                  "self.conv = nn.Conv2d(64, 64, 3, groups=64, bias=False)"),
                         16 * 64 * (512 * 512 + 510 * 510) * 4, "bytes"),
    "conv_depthwise_separable": (
        _problem("self.pointwise(self.depthwise(x))", "torch.randn(16, 64, 256, 256)",
                 "self.depthwise = nn.Conv2d(64, 64, 3, padding=1, groups=64, bias=False)\n"
                 "self.pointwise = nn.Conv2d(64, 128, 1, bias=False)"),
        _conv_flops(16, 128, 64, (1, 1), (256, 256)), "flops"),
    "conv_pointwise": (_problem("self.conv(x)", "torch.randn(16, 64, 256, 256)",
                                "self.conv = nn.Conv2d(64, 128, 1, bias=False)"),
                       _conv_flops(16, 128, 64, (1, 1), (256, 256)), "flops"),
    "conv1d": (_problem("self.conv(x)", "torch.randn(32, 64, 65536)",
                        "self.conv = nn.Conv1d(64, 128, 3, bias=False)"),
               _conv_flops(32, 128, 64, (3,), (65534,)), "flops"),
    "conv_transpose1d": (_problem("self.deconv(x)", "torch.randn(64, 64, 65536)",
                                  "self.deconv = nn.ConvTranspose1d(64, 32, 3, bias=False)"),
                         _conv_flops(64, 32, 64, (3,), (65536,)), "flops"),
    "conv_transpose3d_grouped": (
        _problem("self.deconv(x)", "torch.randn(16, 32, 16, 32, 32)",
                 "self.deconv = nn.ConvTranspose3d(32, 64, 3, stride=2, padding=1, groups=4, "
                 "bias=False)"),
        _conv_flops(16, 64, 8, (3, 3, 3), (16, 32, 32)), "flops"),
    "conv3d_rgb": (_problem("self.conv(x)", "torch.randn(16, 3, 64, 64, 64)",
                            "self.conv = nn.Conv3d(3, 64, 3, bias=False)"),
                   _conv_flops(16, 64, 3, (3, 3, 3), (62, 62, 62)), "flops"),
    # KernelBench L1's convs over 3 input channels (the flat K loop): 2-D on an asymmetric
    # input, 3-D with an asymmetric kernel
    "conv2d_rgb": (_problem("self.conv(x)", "torch.randn(16, 3, 128, 256)",
                            "self.conv = nn.Conv2d(3, 64, 3, bias=False)"),
                   _conv_flops(16, 64, 3, (3, 3), (126, 254)), "flops"),
    "conv3d_rgb_357": (_problem("self.conv(x)", "torch.randn(16, 3, 64, 64, 64)",
                                "self.conv = nn.Conv3d(3, 64, (3, 5, 7), bias=False)"),
                       _conv_flops(16, 64, 3, (3, 5, 7), (62, 60, 58)), "flops"),
    # KernelBench L3's recurrent sequences: an LSTM's final hidden states (batch first,
    # states given) and a bidirectional GRU's outputs (time-major)
    "lstm_hn": (_problem("self.lstm(x, (h0, c0))[1][0]",
                         "torch.rand(10, 512, 128), torch.rand(6, 10, 256), "
                         "torch.rand(6, 10, 256)",
                         "self.lstm = nn.LSTM(128, 256, 6, batch_first=True)",
                         args="x, h0, c0"),
                _recurrent_flops(512, 10, 128, 256, 6, 4, 1), "flops"),
    "gru_bidirectional": (_problem("self.gru(x, h0)[0]",
                                   "torch.rand(512, 3, 64), torch.rand(12, 3, 128)",
                                   "self.gru = nn.GRU(64, 128, 6, bidirectional=True)",
                                   args="x, h0"),
                          _recurrent_flops(512, 3, 64, 128, 6, 3, 2), "flops"),
    "bmm": (_problem("torch.bmm(a, b)", "torch.randn(128, 512, 1024), torch.randn(128, 1024, 2048)",
                     args="a, b"), 2 * 128 * 512 * 1024 * 2048, "flops"),
    "matmul_transposed_a": (_problem("torch.matmul(a.T, b)",
                                     "torch.randn(8192, 4096), torch.randn(8192, 4096)",
                                     args="a, b"), 2 * 4096 * 8192 * 4096, "flops"),
    "matmul_tall_skinny": (_problem("torch.matmul(a, b)",
                                    "torch.randn(16384, 32), torch.randn(32, 16384)", args="a, b"),
                           (16384 * 16384 + 2 * 16384 * 32) * 4, "bytes"),
    # small matrices over a long K (KernelBench L1 6's pattern): 4 output tiles
    "matmul_large_k": (_problem("torch.matmul(a, b)",
                                "torch.randn(256, 524288), torch.randn(524288, 256)",
                                args="a, b"), 2 * 256 * 256 * 524288, "flops"),
    "matvec": (_problem("torch.matmul(a, b)", "torch.randn(2048, 524288), torch.randn(524288, 1)",
                        args="a, b"), (2048 * 524288 + 524288 + 2048) * 4, "bytes"),
    "instance_norm": (_problem("self.norm(x)", "torch.randn(112, 64, 512, 512)",
                               "self.norm = nn.InstanceNorm2d(64)"),
                      2 * 112 * 64 * 512 * 512 * 4, "bytes"),
    "group_norm": (_problem("self.norm(x)", "torch.randn(112, 64, 512, 512)",
                            "self.norm = nn.GroupNorm(8, 64)"),
                   2 * 112 * 64 * 512 * 512 * 4, "bytes"),
    "batch_norm_train": (_problem("F.batch_norm(x, None, None, self.weight, self.bias, "
                                  "training=True)", "torch.randn(64, 64, 512, 512)",
                                  "self.weight = nn.Parameter(torch.rand(64) + 0.5)\n"
                                  "self.bias = nn.Parameter(torch.randn(64))"),
                         2 * 64 * 64 * 512 * 512 * 4, "bytes"),
    "cumprod": (_problem("torch.cumprod(x, dim=1)", "torch.rand(32768, 32768) * 0.2 + 0.9"),
                2 * 32768 * 32768 * 4, "bytes"),
    "triplet": (_problem("F.triplet_margin_loss(a, p, n)",
                         "torch.randn(16384, 8192), torch.randn(16384, 8192), "
                         "torch.randn(16384, 8192)", args="a, p, n"),
                3 * 16384 * 8192 * 4, "bytes"),
    "sdpa": (_problem("F.scaled_dot_product_attention(q, k, v)",
                      "torch.randn(16, 32, 1024, 64), torch.randn(16, 32, 1024, 64), "
                      "torch.randn(16, 32, 1024, 64)", args="q, k, v"),
             4 * 16 * 32 * 1024 * 1024 * 64, "flops"),
    # the suite's level-2 convolutions (benchmarks/suite/l2_017, l2_048, l2_074: their shapes)
    "conv2d_instancenorm_divide": (
        _problem("self.norm(self.conv(x)) / 2.0", "torch.rand(128, 64, 128, 128)",
                 "self.conv = nn.Conv2d(64, 128, 3)\nself.norm = nn.InstanceNorm2d(128)"),
        _conv_flops(128, 128, 64, (3, 3), (126, 126)), "flops"),
    "conv3d_scale_tanh_multiply_sigmoid": (
        _problem("torch.sigmoid(torch.tanh(self.conv(x) * self.scale) * self.multiplier)",
                 "torch.randn(128, 3, 16, 64, 64)",
                 "self.conv = nn.Conv3d(3, 16, 3)\n"
                 "self.scale = nn.Parameter(torch.randn(16, 1, 1, 1))\n"
                 "self.multiplier = nn.Parameter(torch.randn(16, 1, 1, 1))"),
        _conv_flops(128, 16, 3, (3, 3, 3), (14, 62, 62)), "flops"),
    "conv_transpose3d_leakyrelu_max": (
        _problem("F.max_pool3d(F.leaky_relu(F.leaky_relu(self.deconv(x), 0.2) * self.multiplier,"
                 " 0.2), 2)", "torch.randn(16, 16, 16, 32, 32)",
                 "self.deconv = nn.ConvTranspose3d(16, 32, 3, stride=2, padding=1, "
                 "output_padding=1)\nself.multiplier = nn.Parameter(torch.randn(32, 1, 1, 1))"),
        _conv_flops(16, 32, 16, (3, 3, 3), (16, 32, 32)), "flops"),
    # GEMM and conv chains ending in a norm (KernelBench L2 30, 33 and 21's patterns)
    "gemm_groupnorm_hardtanh": (
        _problem("F.hardtanh(self.norm(self.gemm(x)), -2.0, 2.0)", "torch.randn(1024, 8192)",
                 "self.gemm = nn.Linear(8192, 8192)\nself.norm = nn.GroupNorm(16, 8192)"),
        2 * 1024 * 8192 * 8192, "flops"),
    "gemm_scale_batchnorm": (
        _problem("F.batch_norm(self.gemm(x) * self.scale, None, None, self.weight, self.bias, "
                 "training=True)", "torch.randn(1024, 8192)",
                 "self.gemm = nn.Linear(8192, 8192)\n"
                 "self.scale = nn.Parameter(torch.randn(8192))\n"
                 "self.weight = nn.Parameter(torch.rand(8192) + 0.5)\n"
                 "self.bias = nn.Parameter(torch.randn(8192))"),
        2 * 1024 * 8192 * 8192, "flops"),
    "conv2d_add_scale_sigmoid_groupnorm": (
        _problem("self.norm(torch.sigmoid((self.conv(x) + self.bias) * self.scale))",
                 "torch.randn(128, 32, 128, 128)",
                 "self.conv = nn.Conv2d(32, 64, 3)\n"
                 "self.bias = nn.Parameter(torch.randn(64, 1, 1))\n"
                 "self.scale = nn.Parameter(torch.randn(64, 1, 1))\n"
                 "self.norm = nn.GroupNorm(8, 64)"),
        _conv_flops(128, 64, 32, (3, 3), (126, 126)), "flops"),
}

CONV_NEIGHBOURS = {"ieee": {"PRECISION": "ieee"}, "taps": {"CONV_LOOP": 1},
                   "taps_cl": {"CONV_LOOP": 2}, "taps_cl_m128": {"CONV_LOOP": 2, "BLOCK_M": 128},
                   "taps_cl_n128": {"CONV_LOOP": 2, "BLOCK_N": 128},
                   "taps_cl_k64_s3": {"CONV_LOOP": 2, "BLOCK_K": 64, "num_stages": 3},
                   "taps_cl_m128_n128_8w": {"CONV_LOOP": 2, "BLOCK_M": 128, "BLOCK_N": 128,
                                            "num_warps": 8},
                   "taps_cl_ieee": {"CONV_LOOP": 2, "PRECISION": "ieee"},
                   # taps × channel tiles as one loop Triton pipelines (not measured yet)
                   "flat_taps_cl": {"CONV_LOOP": 3},
                   "flat_taps_cl_k32_s4": {"CONV_LOOP": 3, "BLOCK_K": 32, "num_stages": 4},
                   "flat_taps_cl_m128_n128_8w": {"CONV_LOOP": 3, "BLOCK_M": 128,
                                                 "BLOCK_N": 128, "num_warps": 8}}

# Under tf32 one product per MMA leaves the dots waiting on loads at strict's tiles: larger
# and deeper tiles, and the tf32x3 rung a tolerance miss moves to (what the fallback costs).
TF32_CONV_NEIGHBOURS = {
    "m128_n128_k32_8w_s3": {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 8,
                            "num_stages": 3},
    "m128_n128_k32_8w_s4": {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 8,
                            "num_stages": 4},
    "m128_n128_k64_8w_s3": {"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8},
    "m128_n64_k32_4w_s4": {"BLOCK_M": 128, "BLOCK_K": 32, "num_stages": 4},
    "m128_n64_k64_8w_s3": {"BLOCK_M": 128, "num_warps": 8},
    "m64_n128_k32_4w_s4": {"BLOCK_N": 128, "BLOCK_K": 32, "num_stages": 4},
    "tf32x3": {"PRECISION": "tf32x3"},
    "flat_taps": {"CONV_LOOP": 3},
    "flat_taps_k32_s4": {"CONV_LOOP": 3, "BLOCK_K": 32, "num_stages": 4},
    "flat_taps_m128_n64_k32_4w_s4": {"CONV_LOOP": 3, "BLOCK_N": 64, "BLOCK_K": 32,
                                     "num_warps": 4, "num_stages": 4},
    # the pipelined loop with deeper K-32 stages at the tf32 default's 128x128 tile
    "flat_taps_k32_s4_8w": {"CONV_LOOP": 3, "BLOCK_K": 32, "num_stages": 4},
    "flat_taps_k32_s5_8w": {"CONV_LOOP": 3, "BLOCK_K": 32, "num_stages": 5},
    "flat_taps_k64_s4_8w": {"CONV_LOOP": 3, "BLOCK_K": 64, "num_stages": 4},
    "m64_n128_k64_4w_s3": {"BLOCK_M": 64, "num_warps": 4}}
TF32_GEMM_NEIGHBOURS = {
    "k32_s4": {"BLOCK_K": 32, "num_stages": 4}, "k32_s5": {"BLOCK_K": 32, "num_stages": 5},
    "n256_k32_s3": {"BLOCK_N": 256, "BLOCK_K": 32, "num_stages": 3},
    "n256_k32_s4": {"BLOCK_N": 256, "BLOCK_K": 32, "num_stages": 4},
    "tma": {"TMA": 1}, "tma_k32_s4": {"TMA": 1, "BLOCK_K": 32, "num_stages": 4},
    "tma_n256_k32_s3": {"TMA": 1, "BLOCK_N": 256, "BLOCK_K": 32, "num_stages": 3},
    "tf32x3": {"PRECISION": "tf32x3"},
    # around the TMA 128x256x32 default: deeper or wider K, another swizzle, B as stored,
    # 128x128 tiles with more stages
    "tma_n256_k32_s4": {"TMA": 1, "BLOCK_N": 256, "BLOCK_K": 32, "num_stages": 4},
    "tma_n256_k64_s2": {"TMA": 1, "BLOCK_N": 256, "BLOCK_K": 64, "num_stages": 2},
    "tma_n256_k32_s3_g4": {"TMA": 1, "BLOCK_N": 256, "BLOCK_K": 32, "num_stages": 3,
                           "GROUP_M": 4},
    "tma_n256_k32_s3_g1": {"TMA": 1, "BLOCK_N": 256, "BLOCK_K": 32, "num_stages": 3,
                           "GROUP_M": 1},
    "tma_n256_b_as_stored": {"TMA": 1, "BLOCK_N": 256, "BLOCK_K": 32, "num_stages": 3,
                             "B_KMAJOR": 0},
    "tma_n128_k32_s5": {"TMA": 1, "BLOCK_N": 128, "BLOCK_K": 32, "num_stages": 5},
    "tma_n128_k64_s4": {"TMA": 1, "BLOCK_N": 128, "BLOCK_K": 64, "num_stages": 4},
    # 256x128 tiles over two warpgroups (tf32, H100 2026-12-06: 13-20 % slower than the default)
    "tma_m256_n128_k32_s3": {"TMA": 1, "BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 32,
                             "num_stages": 3},
    "tma_m256_n128_k32_s4": {"TMA": 1, "BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 32,
                             "num_stages": 4},
    # a persistent grid walking the tiles (tf32, H100 2026-12-06: 10-43 % slower)
    "tma_persistent_n128_k32_s4": {"TMA": 1, "PERSISTENT": 1, "BLOCK_N": 128, "BLOCK_K": 32,
                                   "num_stages": 4},
    "tma_persistent_n256_k32_s2": {"TMA": 1, "PERSISTENT": 1, "BLOCK_N": 256, "BLOCK_K": 32,
                                   "num_stages": 2}}
CONVS = ("conv2d_3x3", "conv2d_dilated", "conv3d_relu", "conv_transpose2d", "conv_transpose3d")
TF32_NEIGHBOURS = {"matmul": TF32_GEMM_NEIGHBOURS, "gemm_bias_relu": TF32_GEMM_NEIGHBOURS,
                   **{name: TF32_CONV_NEIGHBOURS for name in CONVS}}

# the rows family's one-read variant (GPU only): segment length and warps per program
COOP_NEIGHBOURS = {"online_4096_8w": {"variant": "online", "BLOCK_R": 4096, "num_warps": 8},
                   "coop_8192_4w": {"variant": "coop", "BLOCK_R": 8192, "num_warps": 4},
                   "coop_4096_4w": {"variant": "coop", "BLOCK_R": 4096, "num_warps": 4},
                   "coop_16384_8w": {"variant": "coop", "BLOCK_R": 16384, "num_warps": 8},
                   "coop_16384_16w": {"variant": "coop", "BLOCK_R": 16384, "num_warps": 16},
                   # more, smaller programs a row: more rows in flight between the waits
                   "coop_8192_8w": {"variant": "coop", "BLOCK_R": 8192, "num_warps": 8},
                   "coop_4096_2w": {"variant": "coop", "BLOCK_R": 4096, "num_warps": 2},
                   # a row's partials published an iteration ahead of its wait
                   "coop_ahead": {"variant": "coop", "BLOCK_R": 8192, "num_warps": 4,
                                  "COOP_AHEAD": 1},
                   "coop_8192_8w_ahead": {"variant": "coop", "BLOCK_R": 8192, "num_warps": 8,
                                          "COOP_AHEAD": 1},
                   "coop_8192_16w_ahead": {"variant": "coop", "BLOCK_R": 8192, "num_warps": 16,
                                           "COOP_AHEAD": 1},
                   "coop_4096_8w_ahead": {"variant": "coop", "BLOCK_R": 4096, "num_warps": 8,
                                          "COOP_AHEAD": 1}}

POOL_NEIGHBOURS = {"flat": {"POOL_TILE": 0}, "tile": {"POOL_TILE": 1},
                   "flat_8w": {"POOL_TILE": 0, "num_warps": 8},
                   "flat_128": {"POOL_TILE": 0, "BLOCK": 128},
                   "tile_8w": {"POOL_TILE": 1, "num_warps": 8},
                   "tile_2048_8w": {"POOL_TILE": 1, "BLOCK": 2048, "num_warps": 8},
                   "row_taps": {"POOL_TILE": 2}, "row_taps_8w": {"POOL_TILE": 2, "num_warps": 8}}

# a recurrence's tiles a step (writers/recurrence.py: BLOCK_N units, BLOCK_K deep), warps,
# and the cooperative variant (a step's units over programs that wait for each other)
RECURRENCE_NEIGHBOURS = {"ieee": {"PRECISION": "ieee"}, "units32": {"BLOCK_N": 32},
                         "depth64": {"BLOCK_K": 64}, "depth16": {"BLOCK_K": 16},
                         "warps8": {"num_warps": 8}, "warps2": {"num_warps": 2},
                         "coop": {"RECURRENCE_COOP": 1},
                         "coop_units16": {"RECURRENCE_COOP": 1, "BLOCK_N": 16},
                         "coop_units16_w2": {"RECURRENCE_COOP": 1, "BLOCK_N": 16,
                                             "num_warps": 2},
                         "coop_ieee": {"RECURRENCE_COOP": 1, "PRECISION": "ieee"}}

# neighbours of each default worth timing beside it (overlays on the default parameters)
NEIGHBOURS = {
    "lstm_hn": RECURRENCE_NEIGHBOURS, "gru_bidirectional": RECURRENCE_NEIGHBOURS,
    "softmax": {"looped": {"variant": "looped"}, "online_8192_16w": {"BLOCK_R": 8192,
                                                                    "num_warps": 16},
                "online_2048_4w": {"BLOCK_R": 2048, "num_warps": 4}, **COOP_NEIGHBOURS},
    "log_softmax": {"looped": {"variant": "looped"}, **COOP_NEIGHBOURS},
    "layernorm": {**COOP_NEIGHBOURS, "split128": {"SPLIT": 128}, "split32": {"SPLIT": 32},
                  "split512": {"SPLIT": 512}, "warps4": {"num_warps": 4},
                  "chunk4096_split64": {"BLOCK_R": 4096, "SPLIT": 64},
                  "online_unsplit": {"variant": "online", "SPLIT": 1}},
    "rmsnorm_wide": {"split128": {"SPLIT": 128}, "split512": {"SPLIT": 512}, **COOP_NEIGHBOURS},
    "rmsnorm": {"rows128": {"ROWS": 128}, "rows64_4w": {"ROWS": 64, "num_warps": 4},
                "rows16": {"ROWS": 16},
                # the default's 256 rows (the space's most) over more or fewer warps
                "rows256_16w": {"num_warps": 16}, "rows256_4w": {"num_warps": 4}},
    "gelu_mingpt": {"block2048_8w": {"BLOCK": 2048, "num_warps": 8},
                    "block4096_8w": {"BLOCK": 4096, "num_warps": 8}},
    "softplus": {"block2048_8w": {"BLOCK": 2048, "num_warps": 8},
                 "block4096_8w": {"BLOCK": 4096, "num_warps": 8}},
    "sum_dim": {"block1024": {"BLOCK_R": 1024}, "rows1": {"ROWS": 1},
                "single_rows4": {"variant": "single", "ROWS": 4, "BLOCK_R": 4096},
                "looped_rows64_r256": {"variant": "looped", "ROWS": 64, "BLOCK_R": 256},
                "looped_rows256_r64": {"variant": "looped", "ROWS": 256, "BLOCK_R": 64}},
    "mse": {"split256": {"SPLIT": 256}, "split4096": {"SPLIT": 4096}},
    "frobenius": {"split256": {"SPLIT": 256}, "split4096": {"SPLIT": 4096},
                  "split2048": {"SPLIT": 2048}, "split8192": {"SPLIT": 8192},
                  "split4096_r4096_16w": {"SPLIT": 4096, "BLOCK_R": 4096, "num_warps": 16}},
    "cross_entropy": {"block_r1024": {"BLOCK_R": 1024}, "block_r4096_8w": {"BLOCK_R": 4096,
                                                                            "num_warps": 8},
                      "rows1": {"BLOCK_O": 1}, "warps4": {"num_warps": 4}},
    **{name: POOL_NEIGHBOURS for name in ("max_pool2d", "avg_pool1d", "avg_pool2d",
                                          "max_pool1d", "max_pool3d")},
    "matmul": {"ieee": {"PRECISION": "ieee"}, "stages4": {"num_stages": 4},
               "k64_stages2": {"BLOCK_K": 64, "num_stages": 2},
               "n256_stages3": {"BLOCK_N": 256, "num_stages": 3},
               "m64_4w": {"BLOCK_M": 64, "num_warps": 4, "num_stages": 4},
               "tma": {"TMA": 1}, "tma_stages4": {"TMA": 1, "num_stages": 4},
               "tma_n256": {"TMA": 1, "BLOCK_N": 256},
               "b_as_stored": {"B_KMAJOR": 0}, "tma_b_as_stored": {"TMA": 1, "B_KMAJOR": 0},
               "m256_k32_s3": {"BLOCK_M": 256, "BLOCK_K": 32, "num_stages": 3},
               "persistent_k32_s4": {"PERSISTENT": 1, "BLOCK_K": 32, "num_stages": 4},
               "pointer_loads": {"TMA": 0},
               "tma_store_s2": {"TMA_STORE": 1, "num_stages": 2}},
    # a K of 32 (one K tile): the 1 GB output's stores are the work
    "matmul_tall_skinny": {"n256": {"BLOCK_N": 256}, "m64_4w": {"BLOCK_M": 64, "num_warps": 4},
                           "pointer_loads": {"TMA": 0}, "m256_n64": {"BLOCK_M": 256,
                                                                     "BLOCK_N": 64},
                           "b_as_stored": {"B_KMAJOR": 0},
                           # the output through TMA stores, a persistent grid (a tile's
                           # stores overlap the next tile's loads), both
                           "tma_store": {"TMA_STORE": 1},
                           "persistent": {"PERSISTENT": 1},
                           "persistent_tma_store": {"PERSISTENT": 1, "TMA_STORE": 1},
                           "m64_tma_store_4w": {"BLOCK_M": 64, "TMA_STORE": 1,
                                                "num_warps": 4},
                           "n64_persistent_tma_store": {"BLOCK_N": 64, "PERSISTENT": 1,
                                                        "TMA_STORE": 1}},
    "gemm_bias_relu": {"ieee": {"PRECISION": "ieee"}, "stages4": {"num_stages": 4},
                       "k64_stages2": {"BLOCK_K": 64, "num_stages": 2},
                       "n256_stages3": {"BLOCK_N": 256, "num_stages": 3},
                       "tma": {"TMA": 1}, "tma_stages4": {"TMA": 1, "num_stages": 4},
                       "tma_n256": {"TMA": 1, "BLOCK_N": 256},
                       "persistent_k32_s4": {"PERSISTENT": 1, "BLOCK_K": 32, "num_stages": 4},
                       "pointer_loads": {"TMA": 0}},
    **{name: CONV_NEIGHBOURS for name in CONVS},
    # the pooled conv's tile: whole windows a tile, the window reduced in registers
    "conv2d_hardswish_maxpool_mish": {
        "m128_8w": {"BLOCK_M": 128, "num_warps": 8},
        "m128_n128_8w": {"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8},
        "k32_s4": {"BLOCK_K": 32, "num_stages": 4}, "flat_taps": {"CONV_LOOP": 3},
        "n128": {"BLOCK_N": 128}},
    # depthwise stencils (CONV_LOOP 4, direct FMAs): rows a program and warps; and the
    # direct loop where a conv's few input or output channels pad its MMAs
    **{name: {"block512": {"BLOCK": 512}, "block2048_8w": {"BLOCK": 2048, "num_warps": 8},
              "block1024": {"BLOCK": 1024}, "block1024_8w": {"BLOCK": 1024, "num_warps": 8},
              "block256": {"BLOCK": 256}, "block512_8w": {"BLOCK": 512, "num_warps": 8}}
       for name in ("conv_depthwise2d", "conv_depthwise_separable")},
    **{name: {"direct": {"CONV_LOOP": 4}, "direct_8w": {"CONV_LOOP": 4, "num_warps": 8},
              "direct_block512": {"CONV_LOOP": 4, "BLOCK": 512},
              "direct_block128": {"CONV_LOOP": 4, "BLOCK": 128},
              "direct_n16": {"CONV_LOOP": 4, "BLOCK_N": 16},
              "direct_block256_n32": {"CONV_LOOP": 4, "BLOCK": 256, "BLOCK_N": 32},
              "direct_block256_8w": {"CONV_LOOP": 4, "BLOCK": 256, "num_warps": 8},
              "k32": {"BLOCK_K": 32}, "k32_m128_8w": {"BLOCK_K": 32, "BLOCK_M": 128,
                                                      "num_warps": 8},
              "flat_k": {"CONV_LOOP": 0},
              "rows_fast": {"CONV_ROWS_FAST": 1},
              "rows_fast_m128_8w": {"CONV_ROWS_FAST": 1, "BLOCK_M": 128, "num_warps": 8}}
       for name in ("conv_transpose3d_mean_softmax", "conv3d_rgb", "conv_transpose3d_grouped",
                    "conv3d_scale_tanh_multiply_sigmoid", "conv2d_rgb", "conv3d_rgb_357")},
    # a K split filling one wave (spaces/templates.split_k_default) against none and others
    **{name: {"split1": {"SPLIT_K": 1}, "split4": {"SPLIT_K": 4},
              "split16_m64": {"SPLIT_K": 16, "BLOCK_M": 64},
              "split32_m64_4w": {"SPLIT_K": 32, "BLOCK_M": 64, "num_warps": 4}}
       for name in ("matvec", "matmul_large_k")},
    # the weight's column sums (a COLUMNS tile): outputs a program (BLOCK_R), warps
    **{name: {"cols128": {"BLOCK_R": 128}, "cols512": {"BLOCK_R": 512},
              "cols256_8w": {"num_warps": 8}}
       for name in ("gemm_divide_sum_scaling", "gemm_subtract_mean_lse_gelu_residual")},
}


# Experiments, not templates: textual rewrites of a rendered kernel, timed beside it as
# "<label>_<suffix>"; the check against float64 shows any rewrite that broke a kernel.
UNROLL_MAX_TRIPS = 128


def index32(source: str) -> str:
    """Every index in 32 bits: what 64-bit index math costs where every offset fits in 31
    bits (Inductor indexes in 32 bits there)."""
    return source.replace("tl.int64", "tl.int32")


def unrolled(source: str) -> str:
    """Constant-trip loops (a pool's window taps, a conv's taps) unrolled by tl.static_range,
    so every tap's load can be in flight at once where the rolled loop waits for each."""
    def static(match):
        trips = int(match.group(2))
        if trips > UNROLL_MAX_TRIPS:
            return match.group(0)
        return f"for {match.group(1)} in tl.static_range({trips}):"
    return re.sub(r"for (\w+) in range\((\d+)\):", static, source)


def evict_last(source: str) -> str:
    """A pool's window loads marked evict-last, so the input rows neighbouring windows share
    stay in L2 (Inductor marks its pool loads so; its MaxPool2d kernel compiles to about the
    same instructions as ours otherwise)."""
    return source.replace(", mask=vmask, other=0.0)",
                          ", mask=vmask, other=0.0, eviction_policy='evict_last')")


def load_poll(source: str) -> str:
    """The coop kernel's wait polls its counter with plain volatile loads (served in
    parallel from L2) and takes the acquire once, after the count is complete, instead of
    an atomic read-modify-write per poll (serialised on the counter's L2 slice)."""
    def poll(match):
        indent, counter = match.group(1), match.group(2)
        return (f"{indent}while (seen < SPLIT) & (spins < SPIN_LIMIT):\n"
                f"{indent}    seen = tl.load({counter}, volatile=True)\n"
                f"{indent}    spins += 1\n"
                f"{indent}seen = tl.atomic_add({counter}, 0, sem='acquire')\n")
    return re.sub(r"( *)while \(seen < SPLIT\) & \(spins < SPIN_LIMIT\):\n *seen = "
                  r"tl\.atomic_add\((.*?), 0, sem='acquire'\)\n *spins \+= 1\n", poll, source)


def warp_specialized(source: str) -> str:
    """The GEMM's K loop warp-specialized by Triton (`tl.range(..., warp_specialize=True)`):
    producer warps issue the TMA loads while consumer warpgroups run the MMAs, where the
    plain loop's software pipeline has every warp do both."""
    return re.sub(r"for (k0) in range\((.*?)\):",
                  r"for \1 in tl.range(\2, warp_specialize=True):", source)


# suffix: (rewrite, {problem: labels of the kernels it rewrites})
_POOLS = ("max_pool2d", "avg_pool1d", "avg_pool2d", "max_pool1d", "max_pool3d")
EXPERIMENTS = {
    "i32": (index32, {name: ("default",) for name in
                      (*_POOLS, "cross_entropy", "sum_dim", "conv2d_3x3", "conv_transpose2d")}),
    "unrolled": (unrolled, {"max_pool2d": ("default",), "avg_pool1d": ("default", "flat"),
                            "avg_pool2d": ("default",), "conv2d_3x3": ("default",),
                            "conv_transpose2d": ("default",)}),
    "evict_last": (evict_last, {"max_pool2d": ("default", "flat_128"),
                                "avg_pool1d": ("default", "row_taps"), "avg_pool2d": ("default",),
                                "max_pool1d": ("row_taps",), "max_pool3d": ("row_taps",)}),
    "ldpoll": (load_poll, {name: ("default", "coop_ahead", "coop_4096_8w_ahead")
                           for name in ("softmax", "log_softmax")}),
    "ws": (warp_specialized, {name: ("default", "tma_m256_n128_k32_s3", "tma_n128_k64_s4")
                              for name in ("matmul", "gemm_bias_relu")}),
}


def _experiments(name: str, kernels: dict) -> dict:
    """The experiments' rewrites of `kernels` for problem `name`, by label."""
    return {f"{label}_{suffix}": {"params": kernels[label]["params"],
                                  "source": rewrite(kernels[label]["source"])}
            for suffix, (rewrite, by_problem) in EXPERIMENTS.items()
            for label in by_problem.get(name, ()) if label in kernels}


def render(out: Path = KERNELS_JSON, target: str = "h200", policy: str = "strict") -> dict:
    """Render each problem's default kernel and its neighbours under `policy` (needs the
    project); under tf32, only the problems whose kernels have dots."""
    from search_engine.synthesis.offline import OfflineSynthesizer
    from search_engine.synthesis.offline.synthesizer import family_module

    syn = OfflineSynthesizer()
    neighbours = NEIGHBOURS if policy == "strict" else TF32_NEIGHBOURS
    data = {}
    for name, (source, work, unit) in PROBLEMS.items():
        if policy != "strict" and name not in neighbours:
            continue
        an = syn.analysis(source)
        space = family_module(an)
        default = space.default_params(an, target, policy)
        kernels = {"default": {"params": default, "source": syn.render(source, default)}}
        for label, overlay in neighbours.get(name, {}).items():
            params = space.clamp(an, {**default, **overlay})
            if params != default and space.valid(an, params):
                rendered = syn.render(source, params)
                # a parameter this problem's writers ignore renders a kernel already here
                # (beside its template parameters, named in the header): timed once
                if _body(rendered) not in {_body(k["source"]) for k in kernels.values()}:
                    kernels[label] = {"params": params, "source": rendered}
        kernels.update(_experiments(name, kernels))
        data[name] = {"problem": source, "work": work, "unit": unit, "kernels": kernels,
                      "policy": policy}
    out.write_text(json.dumps(data, indent=1, sort_keys=True, default=str))
    return data


def _body(source: str) -> str:
    """A rendered candidate without its header's template parameters (the only lines a
    parameter its writers ignore changes)."""
    return "\n".join(line for line in source.splitlines()
                     if not line.startswith("Template parameters:"))


# -- the GPU side: torch, triton and numpy only ---------------------------------------------

def _module(name: str, source: str, folder: Path):
    path = folder / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _rel_error(out, ref) -> float:
    import torch

    ref = ref.double()  # an index output (argmax) is compared as numbers too
    return float(torch.linalg.vector_norm((out.double() - ref).flatten())
                 / torch.linalg.vector_norm(ref.flatten()).clamp_min(1e-30))


def _bench(fn) -> float:
    import triton.testing

    return float(triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median"))


def kernel_times(fn, reps: int = 5) -> list[dict]:
    """Device time per GPU kernel of one call of `fn` (the average over `reps` calls, by
    torch.profiler), slowest first: which of a pipeline's kernels holds the time, ours
    beside Inductor's."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    rows = []
    for event in prof.key_averages():
        total = getattr(event, "device_time_total", None)
        if total is None:
            total = getattr(event, "cuda_time_total", 0.0)
        if total > 0 and event.count:
            rows.append({"kernel": event.key[:120], "calls": event.count // reps,
                         "us": round(total / reps, 2)})
    return sorted(rows, key=lambda r: -r["us"])


def time_problem(name: str, entry: dict, folder: Path, use_compile: bool,
                 per_kernel: bool = False) -> dict:
    import torch

    policy = entry.get("policy", "strict")
    tf32 = policy == "tf32"  # baselines at the kernels' precision: strict is true fp32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.set_float32_matmul_precision("high" if tf32 else "highest")
    problem = _module(f"problem_{name}", entry["problem"], folder)
    torch.manual_seed(0)
    model = problem.Model(*problem.get_init_inputs()).cuda().eval()
    torch.manual_seed(1)
    inputs = [x.cuda() for x in problem.get_inputs()]
    row = {"name": name, "work": entry["work"], "unit": entry["unit"], "policy": policy,
           "kernels": {}}
    with torch.no_grad():
        # integer inputs (class labels) stay integers in the float64 reference
        ref = model.double()(*[x.double() if x.is_floating_point() else x for x in inputs])
        model.float()
        eager_out = model(*inputs)
        row["eager_rel_error"] = _rel_error(eager_out, ref)
        del eager_out
        row["eager_ms"] = _bench(lambda: model(*inputs))
        if use_compile:
            started = time.perf_counter()
            compiled = torch.compile(model, mode="max-autotune-no-cudagraphs")
            compiled(*inputs)
            row["compile_seconds"] = round(time.perf_counter() - started, 1)
            row["compile_rel_error"] = _rel_error(compiled(*inputs), ref)
            row["compile_ms"] = _bench(lambda: compiled(*inputs))
            if per_kernel:
                row["compile_kernels"] = kernel_times(lambda: compiled(*inputs))
        for label, kernel in entry["kernels"].items():
            record = {"params": kernel["params"]}
            try:
                cand = _module(f"cand_{name}_{label}", kernel["source"], folder)
                new = cand.ModelNew(*problem.get_init_inputs()).cuda()
                new.load_state_dict(model.state_dict())
                record["rel_error"] = _rel_error(new(*inputs), ref)
                record["correct"] = record["rel_error"] <= REL_NORM[policy]
                record["ms"] = _bench(lambda: new(*inputs))
                if per_kernel:
                    record["kernels"] = kernel_times(lambda: new(*inputs))
            except Exception as exc:  # one failing candidate must not end the run
                record["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
            row["kernels"][label] = record
        del ref
    torch.cuda.empty_cache()
    return row


def _copy_bandwidth() -> float:
    """GB/s of a device-to-device copy of 1 GiB (read + write), the memory-bound floor."""
    import torch

    src = torch.empty(1 << 28, device="cuda")
    dst = torch.empty_like(src)
    ms = _bench(lambda: dst.copy_(src))
    del src, dst
    return 2 * (1 << 30) / (ms * 1e-3) / 1e9


def _print_row(row: dict) -> None:
    unit = row["unit"]

    def rate(ms):
        return (row["work"] / (ms * 1e-3)) / (1e12 if unit == "flops" else 1e9)

    label = "TFLOP/s" if unit == "flops" else "GB/s"
    compile_ms = row.get("compile_ms")
    print(f"\n== {row['name']}: eager {row['eager_ms']:.3f} ms ({rate(row['eager_ms']):.0f} "
          f"{label}, rel err {row['eager_rel_error']:.1e})"
          + (f", compile {compile_ms:.3f} ms ({rate(compile_ms):.0f} {label}, "
             f"{row['compile_seconds']} s to compile)" if compile_ms else ""))
    for label_k, rec in row["kernels"].items():
        if "ms" not in rec:
            print(f"   {label_k:18s} FAILED {rec.get('error', '')}")
            continue
        vs_compile = f"  x{compile_ms / rec['ms']:.2f} vs compile" if compile_ms else ""
        of_copy = (f" ({rate(rec['ms']) / row['copy_gbs']:.2f} of copy)"
                   if unit == "bytes" and row.get("copy_gbs") else "")
        print(f"   {label_k:18s} {rec['ms']:.3f} ms  {rate(rec['ms']):7.0f} {label}{of_copy}  "
              f"x{row['eager_ms'] / rec['ms']:.2f} vs eager{vs_compile}  "
              f"rel err {rec['rel_error']:.1e} {'ok' if rec['correct'] else 'WRONG'}",
              flush=True)
        _print_kernels(rec.get("kernels"))
    if row.get("compile_kernels"):
        print("   compile's kernels:")
        _print_kernels(row["compile_kernels"])


def _print_kernels(kernels: list[dict] | None) -> None:
    for kernel in (kernels or [])[:6]:
        print(f"      {kernel['us']:10.1f} us  x{kernel['calls']}  {kernel['kernel']}")


def select(data: dict, only: str, labels: str) -> list[str]:
    """The problems `only` names (comma-separated, in its order; all when empty), keeping in
    `data` only the kernels `labels` names (all when empty)."""
    names = [n for n in only.split(",") if n in data] if only else list(data)
    if labels:
        keep = set(labels.split(","))
        for name in names:
            data[name]["kernels"] = {k: v for k, v in data[name]["kernels"].items()
                                     if k in keep}
    return names


def merge_beside(data: dict, other: dict, prefix: str) -> None:
    """Another render's kernels into `data` as PREFIX_LABEL (an earlier commit's defaults
    timed beside this one's, same process, same inputs); problems `data` lacks are skipped."""
    for name, entry in other.items():
        if name in data:
            data[name]["kernels"].update({f"{prefix}_{label}": kernel
                                          for label, kernel in entry["kernels"].items()})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["render", "time"])
    parser.add_argument("--kernels", type=Path,
                        help=f"default: {KERNELS_JSON.name} ({KERNELS_JSON_TF32.name} for tf32)")
    parser.add_argument("--precision", choices=sorted(REL_NORM), default="strict",
                        help="the policy the kernels are rendered under and the baselines "
                             "run at (render)")
    parser.add_argument("--only", default="", help="comma-separated problem names")
    parser.add_argument("--labels", default="",
                        help="comma-separated kernel labels to time (default: every one)")
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--kernel-times", action="store_true",
                        help="also each GPU kernel's device time (torch.profiler), for "
                             "compile and for each of ours")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--beside", action="append", default=[], metavar="PREFIX=JSON",
                        help="also time another render's kernels (an earlier commit's JSON: "
                             "git show REV:PATH), labelled PREFIX_LABEL, in this process")
    args = parser.parse_args(argv)
    if args.kernels is None:
        args.kernels = KERNELS_JSON if args.precision == "strict" else KERNELS_JSON_TF32
    if args.command == "render":
        data = render(args.kernels, policy=args.precision)
        print(f"wrote {sum(len(e['kernels']) for e in data.values())} kernels for "
              f"{len(data)} problems to {args.kernels}")
        return 0
    import torch
    import triton

    data = json.loads(args.kernels.read_text())
    for spec in args.beside:
        prefix, _, path = spec.partition("=")
        if not prefix or not path:
            parser.error(f"--beside takes PREFIX=JSON, not {spec!r}")
        merge_beside(data, json.loads(Path(path).read_text()), prefix)
    # in --only's order, so a run cut by its time limit has timed what was asked first
    names = select(data, args.only, args.labels)
    copy_gbs = _copy_bandwidth()
    print(f"{torch.cuda.get_device_name()} torch {torch.__version__} triton {triton.__version__}"
          f", copy {copy_gbs:.0f} GB/s", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            try:
                row = time_problem(name, data[name], Path(tmp), not args.no_compile,
                                   args.kernel_times)
            except Exception as exc:  # a problem whose baseline fails must not end the run
                print(f"\n== {name}: FAILED {type(exc).__name__}: {str(exc)[:300]}", flush=True)
                torch.cuda.empty_cache()
                continue
            row["copy_gbs"] = copy_gbs
            _print_row(row)
            rows.append(row)
            if args.out:  # after every problem: a cut run keeps what it measured
                args.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    # run as a file: this folder's modules (rows.py, coverage.py, ...) must not shadow
    # packages that torch and triton import
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    raise SystemExit(main())
