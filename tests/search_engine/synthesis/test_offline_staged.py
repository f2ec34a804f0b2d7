"""The staged families (conv, pooling, norms and reductions, scans, losses, attention,
matmul variants) write correct Triton kernels: through the real evaluator (sandbox, its
trials, the interpreter) and, for more shapes and parameter settings, in-process against
the reference. Shapes are tiny and odd; some inputs are non-contiguous."""

from __future__ import annotations

import random

import pytest
import torch

from search_engine.evaluation.config import EvaluationConfig
from search_engine.evaluation.integrity.static_checks import run_static_checks
from search_engine.evaluation.pipeline import evaluate
from search_engine.synthesis.offline import OfflineSynthesizer
from search_engine.synthesis.offline.frontend.json_io import analysis_to_json
from search_engine.synthesis.offline.frontend.trace import trace_module
from search_engine.synthesis.offline.plan.classify import analysis_from_json
from search_engine.synthesis.offline.plan.kernel_plan import kernel_plan
from search_engine.synthesis.offline.spaces import staged

from .conftest import load_problem, run_candidate


def problem(init: str, forward: str, inputs: str, args: str = "x") -> str:
    body = "".join(f"        {line}\n" for line in init.splitlines())
    return ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
            "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            f"{body}\n    def forward(self, {args}):\n        return {forward}\n\n"
            f"def get_inputs():\n    return [{inputs}]\n\n"
            "def get_init_inputs():\n    return []\n")


def local_analysis(source: str):
    """The test's own trusted problem traced in this process (the library uses the sandbox)."""
    return analysis_from_json(analysis_to_json(trace_module(load_problem(source))))


# one problem per family through the real evaluator (odd sizes, a non-contiguous input)
EVALUATED = {
    "conv": problem("self.conv = nn.Conv2d(3, 5, 3, stride=2, padding=1)\n"
                    "self.bn = nn.BatchNorm2d(5)",
                    "torch.relu(self.bn(self.conv(x.transpose(2, 3))))",
                    "torch.randn(2, 3, 9, 7)"),
    "conv_transposed_grouped": problem(
        "self.conv = nn.ConvTranspose3d(4, 6, 3, stride=2, padding=1, groups=2)",
        "torch.sigmoid(self.conv(x)) * 2.0", "torch.randn(1, 4, 3, 4, 3)"),
    "conv_taps_outer_channels_last": problem(
        "self.conv = nn.Conv2d(16, 6, 3, padding=1)", "torch.relu(self.conv(x))",
        "torch.randn(2, 16, 5, 4)"),
    "pooling": problem("self.pool = nn.MaxPool2d(3, stride=2, padding=1, dilation=2)",
                       "self.pool(x) + 1.0", "torch.randn(2, 3, 11, 10)"),
    "groupnorm": problem("self.gn = nn.GroupNorm(3, 6)", "self.gn(x)", "torch.randn(3, 6, 5, 7)"),
    "scan": problem("", "torch.cumsum(x.flip(1), dim=1).flip(1)",
                    "torch.randn(5, 300)"),
    "loss": problem("", "F.cross_entropy(x, t)",
                    "torch.randn(13, 10), torch.randint(0, 10, (13,))", "x, t"),
    "attention": problem("", "F.scaled_dot_product_attention(q, k, v, is_causal=True)",
                         "torch.randn(2, 3, 19, 16), torch.randn(2, 3, 19, 16), "
                         "torch.randn(2, 3, 19, 16)", "q, k, v"),
    "scalar_input": problem("", "x * s", "torch.randn(9, 13), 3.5", "x, s"),
    "matmul_variant": problem("", "torch.einsum('bijl,lk->bijk', a, b)",
                              "torch.randn(2, 3, 5, 8), torch.randn(8, 6)", "a, b"),
}

EVALUATED_PARAMS = {"conv_taps_outer_channels_last": {"CONV_LOOP": 2}}  # its layout copies too


@pytest.mark.parametrize("name", sorted(EVALUATED))
def test_the_evaluator_finds_the_staged_kernel_correct(name):
    source = EVALUATED[name]
    synthesizer = OfflineSynthesizer()
    an = synthesizer.analysis(source)  # traced in the sandbox
    assert an.family in staged.FAMILIES
    params = {**staged.default_params(an, "interpreter", "strict"),
              **EVALUATED_PARAMS.get(name, {})}
    candidate = synthesizer.render(source, params)
    result = evaluate(source, candidate, target="interpreter", timeout_s=240,
                      config=EvaluationConfig(trials=5, interpreter_reps=1, ncu="off"))
    assert result.status == "correct", (result.status, str(result)[-2000:])


CASES = {
    "conv1d_dilated_strided": problem("self.conv = nn.Conv1d(3, 7, 3, stride=3, dilation=4)",
                                      "self.conv(x)", "torch.randn(2, 3, 37)"),
    "conv2d_depthwise_asymmetric": problem(
        "self.conv = nn.Conv2d(5, 5, (3, 5), stride=(1, 2), padding=(1, 2), groups=5)",
        "self.conv(x)", "torch.randn(2, 5, 9, 13)"),
    "conv3d_epilogue": problem("self.conv = nn.Conv3d(2, 5, 3, padding=(1, 0, 1))\n"
                               "self.bias = nn.Parameter(torch.randn(5, 1, 1, 1))",
                               "F.gelu(self.conv(x)) + self.bias", "torch.randn(1, 2, 5, 6, 4)"),
    "conv_transpose1d_dilated": problem(
        "self.conv = nn.ConvTranspose1d(3, 4, 5, stride=2, padding=1, dilation=3)",
        "self.conv(x)", "torch.randn(2, 3, 7)"),
    "conv_transpose2d_output_padding": problem(
        "self.conv = nn.ConvTranspose2d(4, 6, (3, 2), stride=(2, 3), padding=1, "
        "output_padding=1)", "self.conv(x)", "torch.randn(2, 4, 5, 4)"),
    "conv_groupnorm_pool": problem("self.conv = nn.Conv2d(3, 8, 3)\n"
                                   "self.gn = nn.GroupNorm(4, 8)\nself.pool = nn.AvgPool2d(2)",
                                   "torch.tanh(self.pool(self.gn(self.conv(x))))",
                                   "torch.randn(2, 3, 9, 9)"),
    "avgpool3d_no_pad_count": problem("self.p = nn.AvgPool3d(3, stride=2, padding=1, "
                                      "count_include_pad=False)", "self.p(x)",
                                      "torch.randn(1, 2, 5, 6, 5)"),
    "maxpool1d_ceil": problem("self.p = nn.MaxPool1d(3, stride=2, ceil_mode=True)", "self.p(x)",
                              "torch.randn(2, 3, 12)"),
    "instance_norm_3d": problem("self.n = nn.InstanceNorm3d(4, affine=True)",
                                "self.n(x.transpose(2, 4))", "torch.randn(2, 4, 3, 5, 6)"),
    "batch_stats": problem("self.w = nn.Parameter(torch.randn(3))\n"
                           "self.b = nn.Parameter(torch.randn(3))",
                           "F.batch_norm(x, None, None, self.w, self.b, True)",
                           "torch.randn(4, 3, 5, 6)"),
    "logsumexp_3d": problem("", "torch.logsumexp(x, dim=1)", "torch.randn(3, 37, 5)"),
    "prod": problem("", "torch.prod(x, dim=1)", "torch.rand(5, 20, 3) + 0.5"),
    "cumprod": problem("", "torch.cumprod(x, dim=0)", "torch.rand(37, 5) + 0.5"),
    "cumsum_exclusive": problem(
        "", "torch.cumsum(torch.cat((torch.zeros_like(x.select(1, 0).unsqueeze(1)), x), "
        "dim=1).narrow(1, 0, 100), dim=1)", "torch.randn(5, 100)"),
    "cumsum_masked": problem("", "torch.cumsum(x * m, dim=1)",
                             "torch.randn(5, 70), torch.rand(5, 70) > 0.5", "x, m"),
    "kl": problem("", "F.kl_div(torch.log(x), y, reduction='batchmean')",
                  "torch.rand(9, 7).softmax(-1), torch.rand(9, 7).softmax(-1)", "x, y"),
    "huber": problem("", "F.smooth_l1_loss(x, y)", "torch.randn(9, 7), torch.randn(9, 7)",
                     "x, y"),
    "triplet": problem("self.l = nn.TripletMarginLoss(margin=1.0)", "self.l(a, p, n)",
                       "torch.randn(9, 7), torch.randn(9, 7), torch.randn(9, 7)", "a, p, n"),
    "cosine": problem("", "torch.mean(1 - F.cosine_similarity(x, y, dim=1))",
                      "torch.randn(9, 7), torch.randn(9, 7)", "x, y"),
    "sdpa_rectangular": problem("", "F.scaled_dot_product_attention(q, k, v)",
                                "torch.randn(2, 17, 8), torch.randn(2, 21, 8), "
                                "torch.randn(2, 21, 12)", "q, k, v"),
    "written_out_attention": problem(
        "", "torch.softmax(q @ k.transpose(-2, -1) * 0.25, dim=-1) @ v",
        "torch.randn(2, 13, 16), torch.randn(2, 11, 16), torch.randn(2, 11, 8)", "q, k, v"),
    "diag_matmul": problem("", "torch.diag(a) @ b", "torch.randn(9), torch.randn(9, 5)", "a, b"),
    "triu_matmul": problem("", "torch.triu(torch.matmul(a, b))",
                           "torch.randn(9, 9), torch.randn(9, 9)", "a, b"),
    "broadcast_4d_matmul": problem("", "torch.matmul(a, b.transpose(1, 2))",
                                   "torch.randn(2, 3, 7, 10), torch.randn(3, 6, 10)", "a, b"),
    "gemm_groupnorm": problem("self.fc = nn.Linear(12, 8)\nself.gn = nn.GroupNorm(2, 8)",
                              "torch.relu(self.gn(self.fc(x)))", "torch.randn(5, 12)"),
    "groupnorm_split": problem("self.gn = nn.GroupNorm(2, 4)", "self.gn(x) * 2.0",
                               "torch.randn(2, 4, 16, 16)"),
    "max_split": problem("", "torch.amax(x, dim=(0, 2)) + torch.sum(x, dim=(0, 2))",
                         "torch.randn(20, 3, 20)"),
    # arg-reductions over rows full of ties: the first index of the best value, whichever
    # lane of the tile saw it
    "argmax_of_sums_ties": problem("", "torch.argmax(x.sum(dim=2), dim=1)",
                                   "torch.randint(0, 3, (5, 40, 3)).float()"),
    "argmax_after_scan_ties": problem("", "torch.argmax(torch.cumsum(x, dim=1) * 0.0 + x, "
                                      "dim=1)", "torch.randint(0, 3, (5, 40)).float()"),
}
VARIANTS = [{}, {"BLOCK": 128, "BLOCK_O": 1, "BLOCK_R": 16, "BLOCK_M": 32, "BLOCK_N": 32,
                 "BLOCK_K": 32, "num_warps": 2, "SPLIT_R": 1024}, "h200"]


@pytest.mark.parametrize("variant", range(len(VARIANTS)))
@pytest.mark.parametrize("name", sorted(CASES))
def test_staged_kernels_match_the_reference(name, variant, tmp_path):
    source = CASES[name]
    an = local_analysis(source)
    assert an.family in staged.FAMILIES
    params = staged.default_params(an, "h200", "strict") if VARIANTS[variant] == "h200" \
        else {**staged.default_params(an, "interpreter", "strict"), **VARIANTS[variant]}
    candidate = staged.render(source, an, params)
    for seed in (1, 2):
        expected, got, launched = run_candidate(source, candidate, tmp_path, seed)
        assert launched, "the candidate launched no kernel"
        assert got.shape == expected.shape and got.dtype == expected.dtype
        torch.testing.assert_close(got.double(), expected.double(), atol=1e-4, rtol=1e-4)


def test_families_are_named_after_the_main_anchor():
    expected = {"conv1d_dilated_strided": "conv", "maxpool1d_ceil": "pooling",
                "cumprod": "scan", "batch_stats": "reduction",
                "sdpa_rectangular": "attention", "diag_matmul": "batched_matmul",
                "scalar_input": "pointwise", "kl": "reduction"}
    for name, family in expected.items():
        assert local_analysis({**CASES, **EVALUATED}[name]).family == family, name


def test_moves_stay_in_the_space_and_change_the_source():
    source = CASES["conv_groupnorm_pool"]
    an = local_analysis(source)
    params = staged.default_params(an, "interpreter", "strict")
    rng = random.Random(0)
    moved = [staged.apply_move(an, params, m)
             for m in staged.ordered_moves(an, "failure", "strict", rng)]
    moved = [m for m in moved if m is not None]
    assert moved and all(staged.valid(an, m) for m in moved)
    assert "tf32" not in staged.ordered_moves(an, "compute", "strict", rng)
    sources = {staged.render(source, an, m) for m in moved}
    assert len(sources) > 1


def test_the_conv_epilogue_is_fused_into_one_store():
    source = problem("self.conv = nn.Conv2d(3, 8, 3)\n"
                     "self.bias = nn.Parameter(torch.randn(8, 1, 1))",
                     "torch.relu(self.conv(x)) * 2.0 + self.bias", "torch.randn(2, 3, 8, 8)")
    an = local_analysis(source)
    candidate = staged.render(source, an, staged.default_params(an, "interpreter", "strict"))
    assert candidate.count("@triton.jit") == 1  # conv, bias, relu, scale, add: one kernel


@pytest.mark.parametrize("forward", [
    "y * torch.sigmoid(y)",                               # swish: y read twice
    "(y + self.bias + y) * y + y",                        # a residual read at every step
    "y * torch.clamp((torch.relu(y) + 3.0) / 6.0, 0.0, 1.0)",  # HardSwish spelled out
])
def test_an_epilogue_that_reads_the_conv_twice_stays_in_the_conv_kernel(forward, tmp_path):
    """The epilogue is a region of pointwise ops over the conv's elements, not only a chain:
    a value read twice (`y * f(y)`) no longer stores y and runs a second kernel over it."""
    source = problem("self.conv = nn.Conv2d(3, 8, 3)\n"
                     "self.bias = nn.Parameter(torch.randn(8, 1, 1))",
                     f"(lambda y: {forward})(self.conv(x))", "torch.randn(2, 3, 8, 7)")
    an = local_analysis(source)
    candidate = staged.render(source, an, staged.default_params(an, "interpreter", "strict"))
    assert candidate.count("@triton.jit") == 1
    expected, got, _ = run_candidate(source, candidate, tmp_path)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_a_value_a_later_reduction_also_reads_is_stored_once(tmp_path):
    """relu(conv) feeds both a channel mean and the product with it: the conv kernel stores
    the relu (one exit); the product, which needs the mean, is the last kernel's."""
    source = problem("self.conv = nn.Conv2d(3, 8, 3)",
                     "(lambda y: y * y.mean(dim=1, keepdim=True))(torch.relu(self.conv(x)))",
                     "torch.randn(2, 3, 8, 7)")
    an = local_analysis(source)
    from search_engine.synthesis.offline.plan.stages import plan

    stages = plan(an)
    conv = next(s for s in stages if an.nodes[s.anchor].op == "conv")
    assert [an.nodes[i].op for i in conv.epilogue] == ["relu"]
    candidate = staged.render(source, an, staged.default_params(an, "interpreter", "strict"))
    expected, got, _ = run_candidate(source, candidate, tmp_path)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_the_view_rule_is_torchs():
    """`reshape_strides` says a view exists exactly where `Tensor.view` does, with its
    strides, over random permuted and sliced tensors (the plan decides copies with it)."""
    from search_engine.synthesis.offline.plan.stages import reshape_strides

    rng = random.Random(0)
    for _ in range(500):
        rank = rng.randint(1, 4)
        base = torch.empty([rng.choice([1, 2, 3, 4, 6]) for _ in range(rank)])
        view = base.permute(rng.sample(range(rank), rank))
        d = rng.randrange(rank)
        if view.shape[d] > 1:
            index = [slice(None)] * rank
            index[d] = slice(rng.randint(0, view.shape[d] - 1), None, rng.randint(1, 2))
            view = view[tuple(index)]
        new, rest = [], view.numel()
        while rest > 1:
            new.append(rng.choice([k for k in range(2, rest + 1) if rest % k == 0]))
            rest //= new[-1]
        new.insert(rng.randint(0, len(new)), 1)
        got = reshape_strides(list(view.shape), list(view.stride()), new)
        try:
            want = list(view.view(new).stride())
        except RuntimeError:
            want = None
        assert (got is None) == (want is None), (view.shape, view.stride(), new)
        if got is not None:
            assert [g for g, n in zip(got, new) if n != 1] == \
                [w for w, n in zip(want, new) if n != 1]


@pytest.mark.parametrize("forward,inputs,kernels", [
    ("torch.matmul(x, self.w[4:12].t())", "torch.randn(2, 3, 8)", 1),   # a gate's rows
    ("torch.matmul(x, self.w[:, 2:10:2])", "torch.randn(2, 3, 16)", 1),  # a stepped slice
    # a slice, then split into heads (a view): a fused QKV projection's q and k
    ("(lambda qkv: torch.matmul(qkv[:, :, 0:8].reshape(2, 5, 2, 4).permute(0, 2, 1, 3), "
     "qkv[:, :, 8:16].reshape(2, 5, 2, 4).permute(0, 2, 3, 1)))(torch.matmul(x, self.w.t()))",
     "torch.randn(2, 5, 8)", 2),
    # a reshape that merges a slice's strided dims would make torch copy: stored first
    ("torch.matmul(x, self.w[:, 0:4].reshape(64))", "torch.randn(3, 64)", 2),
])
def test_a_sliced_weight_is_read_by_the_matmul_as_a_view(forward, inputs, kernels, tmp_path):
    """An LSTM gate's rows or a head's columns of a weight: the matmul reads the slice with
    its strides (a torch view) instead of a kernel storing a sliced copy first."""
    source = problem("self.w = nn.Parameter(torch.randn(16, 8))", forward, inputs)
    an = local_analysis(source)
    candidate = staged.render(source, an, staged.default_params(an, "interpreter", "strict"))
    assert candidate.count("@triton.jit") == kernels
    expected, got, _ = run_candidate(source, candidate, tmp_path)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_few_outputs_over_many_elements_split_the_reduction(tmp_path):
    # rows of 2 x 72 x 64 = 9216 elements, longer than a row group's tile
    source = problem("self.gn = nn.GroupNorm(2, 4)", "self.gn(x) * 2.0",
                     "torch.randn(1, 4, 72, 64)")
    an = local_analysis(source)
    params = {**staged.default_params(an, "interpreter", "strict"), "BLOCK_R": 16,
              "BLOCK_O": 1, "SPLIT_R": 1024}
    candidate = staged.render(source, an, params)
    assert "_partial" in candidate  # partial sums, then a combining kernel
    expected, got, _ = run_candidate(source, candidate, tmp_path)
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
    assert "_partial" not in staged.render(source, an, {**params, "SPLIT_R": 1})


def test_a_loss_streams_a_wide_tile_and_reduces_across_it_once(tmp_path):
    # one output over every element: each step adds the tile's values lane by lane (no
    # shuffles or barrier a step; the H100 ran a Huber loss 3.9x faster so), the tile takes
    # the elements of the BLOCK_O rows there are not, and the GPU default splits the
    # elements over 1024 programs
    source = CASES["huber"]
    an = local_analysis(source)
    gpu = staged.render(source, an, staged.default_params(an, "h200", "strict"))
    assert "acc_t += tl.where(m2, " in gpu and "acc = tl.sum(acc_t, axis=1)" in gpu
    assert "BLOCK_O=1, BLOCK_R=64, num_warps" in gpu  # 63 elements: one tile, no split
    big = problem("", "F.smooth_l1_loss(x, y)", "torch.randn(4096, 4096), "
                  "torch.randn(4096, 4096)", "x, y")
    wide = staged.render(big, local_analysis(big),
                         staged.default_params(local_analysis(big), "h200", "strict"))
    assert "BLOCK_O=1, BLOCK_R=1024, SPLIT=1024" in wide
    loop = wide[wide.index("for r_start0"):wide.index("acc = tl.sum(acc_t")]
    assert "tl.sum(" not in loop  # nothing reduced across the tile inside the loop


# 16+ channels per group, so the taps-outer loops are written (fewer keep the flat loop), and
# 16+ output channels a group or a K over 64, so no conv is a direct stencil
WIDE_CONVS = {
    "conv2d_strided_dilated": problem(
        "self.conv = nn.Conv2d(16, 8, (3, 2), stride=2, padding=(1, 2), dilation=(2, 1))",
        "torch.relu(self.conv(x)) * 2.0", "torch.randn(2, 16, 7, 6)"),
    "conv1d_grouped": problem("self.conv = nn.Conv1d(32, 34, 3, padding=1, groups=2)",
                              "self.conv(x)", "torch.randn(2, 32, 9)"),
    "conv3d_no_bias": problem("self.conv = nn.Conv3d(17, 4, 2, bias=False)",
                              "self.conv(x) + 1.0", "torch.randn(1, 17, 3, 4, 3)"),
    "conv_transpose2d": problem("self.conv = nn.ConvTranspose2d(16, 5, 3, stride=2, padding=1)",
                                "torch.tanh(self.conv(x))", "torch.randn(2, 16, 4, 3)"),
    "conv_transpose1d_grouped": problem(
        "self.conv = nn.ConvTranspose1d(32, 34, 4, stride=3, groups=2, dilation=2)",
        "self.conv(x.transpose(1, 2).transpose(1, 2))", "torch.randn(2, 32, 5)"),
    "conv_transpose3d_output_padding": problem(
        "self.conv = nn.ConvTranspose3d(16, 4, 3, stride=(2, 1, 2), padding=1, "
        "output_padding=(1, 0, 1))", "self.conv(x) * 0.5", "torch.randn(1, 16, 3, 2, 2)"),
    "conv_transpose2d_one_row": problem("self.conv = nn.ConvTranspose2d(16, 3, (2, 3), stride=2)",
                                        "self.conv(x)", "torch.randn(2, 16, 1, 2)"),
}


@pytest.mark.parametrize("loop", [1, 2, 3])
@pytest.mark.parametrize("name", sorted(WIDE_CONVS))
def test_taps_outer_conv_loops_match_the_reference(name, loop, tmp_path):
    source = WIDE_CONVS[name]
    an = local_analysis(source)
    params = {**staged.default_params(an, "interpreter", "strict"), "CONV_LOOP": loop}
    candidate = staged.render(source, an, params)
    phased = name.startswith("conv_transpose")
    if loop == 3 and not phased:  # taps × channel tiles as one loop Triton can pipeline
        assert "for kk in range(" in candidate and "for tap in range(" not in candidate
    else:  # a phased transposed conv keeps its taps outer under loop 3 too
        assert "for tap in range(" in candidate and "for c_start in range(" in candidate
    assert ("kh_contiguous(" in candidate) == (loop >= 2)  # channels-last copies
    assert candidate != staged.render(source, an, {**params, "CONV_LOOP": 0})
    # a strided transposed conv runs one output phase per program and skips the taps that
    # do not feed it, instead of masking them out of every MMA
    assert ("% 2 == 0):" in candidate or "% 3 == 0):" in candidate) == phased
    refused = [f"{f.check}: {f.evidence}" for f in run_static_checks(candidate, torch.float32,
                                                                     "strict")
               if f.severity != "warning"]
    assert not refused  # the evaluator takes what the search writes
    expected, got, launched = run_candidate(source, candidate, tmp_path)
    assert launched
    torch.testing.assert_close(got.double(), expected.double(), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("init", ["self.conv = nn.Conv2d(16, 16, 3, groups=16)",
                                  "self.conv = nn.Conv2d(16, 32, 3, groups=16)"])
def test_depthwise_convs_never_take_the_taps_outer_loop(init):
    # one input channel a group: a channel tile would be all padding (a direct stencil
    # where the group's outputs are few too, test_offline_direct_convs.py; else the flat K)
    source = problem(init, "self.conv(x)", "torch.randn(1, 16, 5, 5)")
    an = local_analysis(source)
    params = {**staged.default_params(an, "interpreter", "strict"), "CONV_LOOP": 2}
    assert "for tap in range(" not in staged.render(source, an, params)


POOLED_CONVS = {
    # KernelBench L2 35's pattern: conv, pointwise, max pool, pointwise after it
    "max_then_mish": ("self.conv = nn.Conv2d(16, 8, 3)",
                      "F.mish(F.max_pool2d(F.hardswish(self.conv(x) - 0.5), 2))",
                      "torch.randn(2, 16, 9, 11)"),  # a 7x9 output: the last row/col dropped
    "conv3d_max": ("self.conv = nn.Conv3d(3, 6, 3, padding=1)", "F.max_pool3d(self.conv(x), 2)",
                   "torch.randn(2, 3, 4, 6, 5)"),
    "transposed_avg_bias": ("self.conv = nn.ConvTranspose2d(16, 5, 3, stride=2, padding=1)\n"
                            "self.bias = nn.Parameter(torch.randn(5, 1, 1))",
                            "F.avg_pool2d(torch.tanh(self.conv(x)), 2) + self.bias",
                            "torch.randn(2, 16, 5, 4)"),
    "window_16": ("self.conv = nn.Conv2d(4, 6, 3)", "torch.sigmoid(F.avg_pool2d(self.conv(x), 4))",
                  "torch.randn(2, 4, 14, 11)"),
}


@pytest.mark.parametrize("loop", [0, 1, 2, 3])
@pytest.mark.parametrize("name", sorted(POOLED_CONVS))
def test_a_pool_whose_windows_tile_the_conv_output_is_in_the_conv_kernel(name, loop, tmp_path):
    """The conv's rows walk whole pool windows; each is reduced in registers and only the
    pooled tile is stored: one kernel, correct under every K loop."""
    init, forward, inputs = POOLED_CONVS[name]
    source = problem(init, forward, inputs)
    an = local_analysis(source)
    params = {**staged.default_params(an, "interpreter", "strict"), "CONV_LOOP": loop}
    candidate = staged.render(source, an, params)
    copies = "def kh_layout_copy_kernel" in candidate  # channels-last loops copy x first
    assert candidate.count("@triton.jit") == 1 + copies and "pooling fused" in str(kernel_plan(an))
    expected, got, launched = run_candidate(source, candidate, tmp_path)
    assert [k for k in launched if k != "kh_layout_copy_kernel"] == ["kh_stage0_conv"]
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("forward", [
    "F.max_pool2d(self.conv(x), 3, stride=2)",             # overlapping windows
    "F.max_pool2d(self.conv(x), 2, padding=1)",            # padded
    "F.avg_pool2d(self.conv(x), (1, 3))",                  # a window of 3 taps
    "(lambda y: F.max_pool2d(y, 2).sum() + y.sum())(self.conv(x))",  # the conv read twice
])
def test_a_pool_that_does_not_tile_the_conv_output_keeps_its_kernel(forward, tmp_path):
    source = problem("self.conv = nn.Conv2d(3, 4, 3)", forward, "torch.randn(2, 3, 10, 9)")
    an = local_analysis(source)
    assert "pooling fused" not in str(kernel_plan(an))
    candidate = staged.render(source, an, staged.default_params(an, "interpreter", "strict"))
    expected, got, _ = run_candidate(source, candidate, tmp_path)
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)


def test_a_pool_the_conv_computes_gets_no_pool_moves():
    """Its layout parameters would change nothing: the search spends no child on them."""
    import random as _random

    init, forward, inputs = POOLED_CONVS["max_then_mish"]
    an = local_analysis(problem(init, forward, inputs))
    moves = staged.ordered_moves(an, "memory", "strict", _random.Random(0))
    assert "pool_row_taps" not in moves
    own = local_analysis(problem("self.conv = nn.Conv2d(3, 4, 3)",
                                 "F.max_pool2d(self.conv(x), 3, stride=2)",
                                 "torch.randn(2, 3, 10, 9)"))
    assert staged.ordered_moves(own, "memory", "strict", _random.Random(0))[0] == "pool_row_taps"
