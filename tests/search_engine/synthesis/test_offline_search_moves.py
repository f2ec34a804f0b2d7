"""The moves a search makes from a parent's code and diagnosis: online (fewer passes) rows,
coalesced strided rows, split-precision strict GEMMs. Every move gives a correct kernel on odd,
tiny shapes (also non-contiguous inputs), and every proposal records what it changed and why."""

import random

import pytest
import torch

from search_engine.hardware import get_target
from search_engine.protocols import EvaluationRequest
from search_engine.synthesis.base import MemoryView, NodeView, SynthesisRequest
from search_engine.synthesis.offline import OfflineSynthesizer
from search_engine.synthesis.offline.spaces import templates
from search_engine.synthesis.offline.synthesizer import family_module

from .test_offline_templates import check, problem

SOFTMAX_NONCONTIG = problem("torch.softmax(x, dim=-1)", "torch.randn(700, 5).t()")
LOG_SOFTMAX = problem("torch.log_softmax(x * 2.0, dim=1)", "torch.randn(3, 613)")
LAYERNORM = problem("F.layer_norm(x, x.shape[1:])", "torch.randn(3, 7, 101)")
SUM_AND_MAX = problem("x / torch.sum(torch.abs(x), dim=-1, keepdim=True) + "
                      "torch.amax(x, dim=-1, keepdim=True)", "torch.randn(4, 555)")
ARGMAX = problem("torch.argmax(x, dim=-1)", "torch.randn(4, 555)")
RMS_DIM1 = problem("x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)",
                   "torch.randn(3, 9, 4, 8)")
SOFTMAX_DIM1 = problem("torch.softmax(x, dim=1)", "torch.randn(2, 37, 12)")
MATMUL_ODD = problem("torch.relu(x @ w + 0.5)", "torch.randn(33, 29), torch.randn(29, 47)",
                     args="x, w")

ONLINE = {"variant": "online", "BLOCK_R": 256, "ROWS": 2, "num_warps": 4}


def params_for(source, change, target="interpreter", policy="strict"):
    syn = OfflineSynthesizer()
    an = syn.analysis(source)
    return syn, an, templates.clamp(an, {**templates.default_params(an, target, policy),
                                         **change})


@pytest.mark.parametrize("source", [SOFTMAX_NONCONTIG, LOG_SOFTMAX, LAYERNORM, SUM_AND_MAX,
                                    ARGMAX, SOFTMAX_DIM1])
def test_online_rows_are_correct(source, run):
    syn, an, params = params_for(source, ONLINE)
    check(run, source, syn.render(source, params))


def test_online_softmax_reads_max_and_sum_in_one_pass_and_writes_last_chunk_first():
    syn, an, params = params_for(LOG_SOFTMAX, ONLINE)
    online = syn.render(LOG_SOFTMAX, params)
    looped = syn.render(LOG_SOFTMAX, {**params, "variant": "looped"})
    loops = lambda text: text.count("for start in range(0, R, BLOCK_R):")  # noqa: E731
    assert loops(looped) == 3 and loops(online) == 1  # max, sum, output vs one + output
    assert "start = (n_chunks - 1 - it) * BLOCK_R" in online


def test_independent_reductions_share_a_pass():
    syn, an, params = params_for(SUM_AND_MAX, ONLINE)
    assert syn.render(SUM_AND_MAX, params).count("for start in range(0, R, BLOCK_R):") == 1


STD = problem("(x - x.mean(dim=-1, keepdim=True)) / x.std(dim=-1, keepdim=True)",
              "torch.randn(3, 555) * 3.0 + 40.0")  # a large mean: no E[x^2]-E[x]^2 shortcut
SPLIT = {"variant": "split", "BLOCK_R": 256, "SPLIT": 4, "num_warps": 4}


def test_mean_and_variance_come_from_one_read(run):
    syn, an, params = params_for(LAYERNORM, ONLINE)
    online = syn.render(LAYERNORM, params)
    looped = syn.render(LAYERNORM, {**params, "variant": "looped"})
    loops = lambda text: text.count("for start in range(0, R, BLOCK_R):")  # noqa: E731
    assert loops(looped) == 3 and loops(online) == 1
    syn, an, params = params_for(STD, ONLINE)
    check(run, STD, syn.render(STD, params))


@pytest.mark.parametrize("source", [SOFTMAX_NONCONTIG, LAYERNORM, SUM_AND_MAX, STD, RMS_DIM1])
def test_rows_split_over_programs_are_correct(source, run):
    syn, an, params = params_for(source, SPLIT)
    candidate = syn.render(source, params)
    assert "_pass0[" in candidate and "kh_ws = torch.empty(" in candidate
    check(run, source, candidate)


def test_few_long_rows_are_split_to_fill_the_gpu_and_arg_reductions_never_are():
    an = OfflineSynthesizer().analysis(problem("F.layer_norm(x, x.shape[1:])",
                                               "torch.randn(2, 8, 64, 64)"))
    params = templates.default_params(an, "h200", "strict")
    assert params["variant"] == "split" and params["SPLIT"] == 16  # 32768 / 2048 chunks
    many = OfflineSynthesizer().analysis(problem("torch.softmax(x, dim=-1)",
                                                 "torch.randn(600, 9000)"))
    assert templates.default_params(many, "h200", "strict")["variant"] == "online"
    syn, an, params = params_for(ARGMAX, {})
    assert not templates.valid(an, {**params, **SPLIT})


@pytest.mark.parametrize("rows", [1, 8, 32, 64])
def test_strided_rows_coalesce_and_stay_correct(rows, run):
    # inner = 32 elements between a row's neighbours: ROWS dividing it takes the contiguous
    # addressing, ROWS = 64 the general one
    syn, an, params = params_for(RMS_DIM1, {"variant": "single", "ROWS": rows})
    candidate = syn.render(RMS_DIM1, params)
    assert ("% INNER + tl.arange(0, ROWS)" in candidate) == (32 % rows == 0)
    check(run, RMS_DIM1, candidate)


def test_strided_rows_default_to_many_rows_per_program():
    an = OfflineSynthesizer().analysis(problem("x / torch.sqrt(torch.mean(x ** 2, dim=1, "
                                               "keepdim=True) + 1e-5)",
                                               "torch.randn(2, 64, 16, 32)"))
    params = templates.default_params(an, "h200", "strict")
    assert params["variant"] == "single" and params["ROWS"] >= 128


@pytest.mark.parametrize("precision", ["tf32x3", "ieee"])
def test_strict_gemm_precisions_are_correct(precision, run):
    syn, an, params = params_for(MATMUL_ODD, {"PRECISION": precision, "BLOCK_M": 16,
                                              "BLOCK_N": 32, "BLOCK_K": 16})
    candidate = syn.render(MATMUL_ODD, params)
    assert f"PRECISION='{precision}'" in candidate
    check(run, MATMUL_ODD, candidate)


LINEAR_TMA = problem("torch.relu(F.linear(x, w) + b)",
                     "torch.randn(33, 36), torch.randn(20, 36), torch.randn(20)", args="x, w, b")
MATMUL_TMA = problem("x @ w * 0.5", "torch.randn(33, 36), torch.randn(36, 24)", args="x, w")
MATMUL_T_TMA = problem("x.t() @ w", "torch.randn(36, 32), torch.randn(36, 24)", args="x, w")


@pytest.mark.parametrize("source", [LINEAR_TMA, MATMUL_TMA, MATMUL_T_TMA])
@pytest.mark.parametrize("split_k", [1, 2])
def test_tma_descriptor_gemms_are_correct(source, split_k, run):
    syn, an, params = params_for(source, {"TMA": 1, "BLOCK_M": 16, "BLOCK_N": 16,
                                          "BLOCK_K": 16, "SPLIT_K": split_k})
    assert templates.valid(an, params)
    candidate = syn.render(source, params)
    assert "TensorDescriptor.from_tensor(" in candidate and ".load([" in candidate
    expected, got, launched = run(source, candidate)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
    assert "matmul_kernel" in launched


def test_tma_needs_16_byte_aligned_rows():
    syn, an, params = params_for(MATMUL_ODD, {"TMA": 1})  # K = 29, N = 47 floats
    assert not templates.valid(an, params)
    out = syn.propose(request(MATMUL_ODD, parent_node("p", {**params, "TMA": 0},
                                                      bottleneck="compute-bound")), 8,
                      random.Random(0))
    assert out and all(not p.params["TMA"] for p in out)


def request(source, parent):
    return SynthesisRequest(problem_source=source, target=get_target("h200"), parent=parent,
                            memory=MemoryView("trajectory"))


def parent_node(source, params, status="correct", bottleneck="memory-bound"):
    return NodeView(id=7, source=source, status=status,
                    origin={"synthesizer": "offline", "params": params},
                    diagnostics={"bottleneck": {"class": bottleneck, "reason": "x"}})


def test_memory_bound_looped_parent_goes_online_first_and_the_move_is_recorded():
    source = problem("torch.softmax(x, dim=-1)", "torch.randn(2, 40000)")
    syn, an, params = params_for(source, {"variant": "looped"}, target="h200")
    out = syn.propose(request(source, parent_node("p", params)), 3, random.Random(0))
    first = out[0]
    assert first.transformation == "to_online"
    assert first.move["changed"] == {"variant": ["looped", "online"]}
    assert first.move["parent_id"] == 7 and first.move["parent_diagnosis"] == "memory"
    assert "one read" in first.move["why"]
    assert first.origin("offline")["move"]["name"] == "to_online"


def test_strict_gemm_records_its_dot_precision_and_falls_back_to_ieee_on_failure():
    source = MATMUL_ODD
    syn, an, params = params_for(source, {}, target="h200")
    assert params["PRECISION"] == "tf32x3"
    fresh = syn.propose(request(source, NodeView(id=0, source=source, origin={},
                                                 status="reference")), 1, random.Random(0))
    assert "dot_precision tf32x3" in fresh[0].notes
    failed = syn.propose(request(source, parent_node("p", params, status="incorrect")), 2,
                         random.Random(0))
    assert failed[0].transformation == "dot_ieee"
    assert failed[0].params["PRECISION"] == "ieee" and "dot_precision ieee" in failed[0].notes
    moves = templates.ordered_moves(an, "compute", "strict", random.Random(0))
    assert "tf32" not in moves


@pytest.mark.slow
@pytest.mark.parametrize("source,change", [
    (SOFTMAX_NONCONTIG, ONLINE), (LAYERNORM, ONLINE),
    (RMS_DIM1, {"variant": "single", "ROWS": 8}), (STD, SPLIT),
    (MATMUL_ODD, {"PRECISION": "tf32x3", "BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 16}),
])
def test_moves_pass_the_evaluators_trials(source, change, local_executor):
    syn, an, params = params_for(source, change)
    result = local_executor.submit(EvaluationRequest(
        problem_source=source, candidate_source=syn.render(source, params),
        target="interpreter", precision_policy="strict", timeout_s=300)).result()
    assert result.status == "correct", result.message
    assert torch.isfinite(torch.tensor(result.reward))


def test_a_split_parent_tries_unsplitting_moves_last():
    """Few long rows are split because one program per row leaves the SMs idle: from a
    split parent, the moves back to one program per row come after every other move."""
    import random

    an = OfflineSynthesizer().analysis(problem("F.layer_norm(x, x.shape[1:])",
                                               "torch.randn(2, 8, 64, 64)"))
    params = templates.default_params(an, "h200", "strict")
    moves = templates.ordered_moves(an, "memory", "strict", random.Random(0), params)
    tail = moves[-len(templates.UNSPLIT_MOVES):]
    assert set(tail) == set(templates.UNSPLIT_MOVES) and moves[0] not in templates.UNSPLIT_MOVES
    unsplit = {**params, "variant": "online", "SPLIT": 1}  # other parents: the usual order
    assert templates.ordered_moves(an, "memory", "strict", random.Random(0), unsplit) == \
        templates.ordered_moves(an, "memory", "strict", random.Random(0))


CONV_RELU = problem("torch.relu(self.conv(x))", "torch.randn(2, 3, 9, 9)",
                    "self.conv = nn.Conv2d(3, 32, 3, padding=1, dilation=1)")  # 32: an MMA's


def test_strict_convolutions_run_their_dots_on_tensor_cores_and_fall_back_to_ieee(run):
    # issue 30: a strict conv's implicit GEMM is three tf32 products, as a strict GEMM's is;
    # fp32 FMA ("ieee") is the fallback a failed trial moves to
    syn = OfflineSynthesizer()
    an = syn.analysis(CONV_RELU)
    space = family_module(an)
    strict = space.default_params(an, "h200", "strict")
    assert strict["PRECISION"] == "tf32x3"
    source = syn.render(CONV_RELU, strict)
    assert "input_precision='tf32x3'" in source and "'ieee'" not in source
    assert "input_precision='tf32'" in syn.render(
        CONV_RELU, space.default_params(an, "h200", "tf32"))
    failed = syn.propose(request(CONV_RELU, parent_node(source, strict, status="incorrect")),
                         2, random.Random(0))
    fallback = next(p for p in failed if p.transformation == "dot_ieee")
    assert "input_precision='ieee'" in fallback.source
    assert "dot_precision ieee" in fallback.notes
    assert "tf32" not in space.ordered_moves(an, "compute", "strict", random.Random(0))
    for params in (space.default_params(an, "interpreter", "strict"), fallback.params):
        check(run, CONV_RELU, syn.render(CONV_RELU, {**params, "BLOCK_M": 16, "BLOCK_N": 16,
                                                     "BLOCK_K": 16}))


def tf32_request(source, parent):
    return SynthesisRequest(problem_source=source, target=get_target("h200"), parent=parent,
                            memory=MemoryView("trajectory"), precision_policy="tf32")


INSTANCE_NORM_AFTER_CONV = problem(
    "torch.nn.functional.instance_norm(self.conv(x)) / 2.0", "torch.randn(2, 3, 9, 9)",
    "self.conv = nn.Conv2d(3, 8, 3)")


@pytest.mark.parametrize("source", [MATMUL_ODD, CONV_RELU, INSTANCE_NORM_AFTER_CONV])
def test_a_tf32_kernel_that_misses_its_tolerance_steps_up_to_tf32x3_not_to_ieee(source):
    # a normalisation after a tf32 dot can amplify tf32's error past the tf32 tolerance (an
    # H200 search of Conv2d+InstanceNorm under `tf32` failed the shifted trial 4 of 4 times):
    # the next rung is three tf32 products, several times faster than fp32 FMA
    syn = OfflineSynthesizer()
    an = syn.analysis(source)
    space = family_module(an)
    tf32 = space.default_params(an, "h200", "tf32")
    assert tf32["PRECISION"] == "tf32"
    missed = parent_node(syn.render(source, tf32), tf32, status="incorrect")
    first = syn.propose(tf32_request(source, missed), 2, random.Random(0))[0]
    assert first.transformation == "dot_tf32x3"
    assert first.params["PRECISION"] == "tf32x3" and "'tf32x3'" in first.source
    # one rung at a time: from tf32x3 a miss goes to fp32 FMA
    missed = parent_node(first.source, first.params, status="incorrect")
    assert syn.propose(tf32_request(source, missed), 2,
                       random.Random(0))[0].transformation == "dot_ieee"
    # a fast tf32 kernel is not pushed back to three products
    for diagnosis in ("compute", "memory", "latency"):
        assert "dot_tf32x3" not in space.ordered_moves(an, diagnosis, "tf32", random.Random(0),
                                                       tf32)[:3]


def test_a_screened_family_of_a_parent_that_missed_its_tolerance_is_all_more_accurate():
    # the screening's spot check is one trial: a tf32 sibling passes it, then misses the
    # shifted trial that failed its parent; so the whole family climbs, not only one child
    source = INSTANCE_NORM_AFTER_CONV
    syn = OfflineSynthesizer()
    an = syn.analysis(source)
    tf32 = family_module(an).default_params(an, "h200", "tf32")

    def family(status):
        parent = parent_node(syn.render(source, tf32), tf32, status=status)
        return [p for p in syn.propose(tf32_request(source, parent), 24, random.Random(0))
                if not p.pruned]

    missed = family("incorrect")
    assert len(missed) >= 16
    assert {p.params["PRECISION"] for p in missed} <= {"tf32x3", "ieee"}
    assert any(p.move["changed"].get("PRECISION") == ["tf32", "tf32x3"] for p in missed[1:])
    # a crash says nothing about accuracy: that family keeps the fast dot
    crashed = family("compile_error")
    assert sum(p.params["PRECISION"] == "tf32" for p in crashed) > len(crashed) // 2


def test_tf32_defaults_on_a_gpu_are_the_tiles_measured_for_one_product_per_mma():
    # H200, default_kernels_bench --precision tf32: larger conv tiles and TMA-fed 128x256x32
    # GEMM tiles; strict keeps its own (three products per MMA, TMA-fed too since the H200's
    # bench and the H100's search found TMA faster there) and the interpreter its small
    gemm = problem("torch.relu(x @ w + 0.5)", "torch.randn(256, 512), torch.randn(512, 256)",
                   args="x, w")
    syn = OfflineSynthesizer()
    for source, tf32_tiles, strict_tiles in (
            (CONV_RELU, {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8},
             {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "num_warps": 4}),
            (gemm, {"TMA": 1, "BLOCK_N": 256, "BLOCK_K": 32, "num_stages": 3},
             {"TMA": 1, "BLOCK_N": 128, "BLOCK_K": 64, "num_stages": 3})):
        an = syn.analysis(source)
        space = family_module(an)
        for policy, tiles in (("tf32", tf32_tiles), ("strict", strict_tiles)):
            params = space.default_params(an, "h200", policy)
            assert {k: params[k] for k in tiles} == tiles, (policy, params)
        assert space.default_params(an, "interpreter", "tf32")["BLOCK_M"] <= 64
    # operands TMA cannot take (rows not 16-byte aligned) keep pointer loads under strict
    odd = syn.analysis(problem("x @ w", "torch.randn(64, 30), torch.randn(30, 50)",
                               args="x, w"))
    assert family_module(odd).default_params(odd, "h200", "strict")["TMA"] == 0
