"""Class 7 of issue 26: one semantics on the CPU and the GPU. Under the strict fp32 policy
what the interpreter computes unlike the GPU (TF32 dots, fast math) is refused statically,
and everything the offline synthesizer writes, at each policy it offers, still passes."""

from __future__ import annotations

import random

import pytest

from search_engine.evaluation.integrity.static_checks import run_static_checks

KERNEL = '''
import torch
import triton
import triton.language as tl

PREC = {prec_const!r}

@triton.jit
def mm(a_ptr, b_ptr, c_ptr, N: tl.constexpr, PRECISION: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    c = {dot}
    tl.store(c_ptr + r[:, None] * N + r[None, :], c)

class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        c = torch.empty_like(a)
        mm[(1,)](a, b, c, N=a.shape[0], PRECISION={launch})
        return c
'''


def flags_of(dot: str, launch: str = "'ieee'", policy: str = "strict", prec_const="ieee",
             dtype: str = "float32") -> set[str]:
    source = KERNEL.format(dot=dot, launch=launch, prec_const=prec_const)
    return {f.check for f in run_static_checks(source, dtype, policy)}


@pytest.mark.parametrize("dot", [
    "tl.dot(a, b, input_precision='tf32')",
    "tl.dot(a, b)",                                   # the GPU default is TF32
    "tl.dot(a, b, allow_tf32=True)",
    "tl.dot(a, b, None, 'tf32')",                     # positional input_precision
    "tl.dot(a, b, input_precision=PRECISION)",        # launched with 'tf32' below
    "tl.math.fast_expf(a)",
    "tl.dot(a, b, input_precision='ieee') + tl.extra.cuda.libdevice.fast_dividef(a, b)",
])
def test_strict_refuses_what_the_interpreter_cannot_check(dot):
    assert "static.precision_mismatch" in flags_of(dot, launch="'tf32'")


def test_a_computed_precision_is_refused_under_strict():
    assert "static.precision_mismatch" in flags_of(
        "tl.dot(a, b, input_precision=PRECISION)", launch="'tf' + '32'")


@pytest.mark.parametrize("dot,launch", [
    ("tl.dot(a, b, input_precision='ieee')", "'ieee'"),
    ("tl.dot(a, b, input_precision='tf32x3')", "'ieee'"),
    ("tl.dot(a, b, allow_tf32=False)", "'ieee'"),
    ("tl.dot(a, b, input_precision=PRECISION)", "'tf32x3'"),
    ("tl.dot(a, b, input_precision=PRECISION)", "PREC"),  # a module constant: 'ieee'
])
def test_strict_accepts_fp32_exact_dots(dot, launch):
    assert "static.precision_mismatch" not in flags_of(dot, launch=launch)


@pytest.mark.parametrize("policy", ["tf32", "bf16"])
def test_looser_policies_accept_tf32_and_fast_math(policy):
    assert "static.precision_mismatch" not in flags_of(
        "tl.dot(a, b, input_precision=PRECISION) + tl.math.fast_expf(a)", launch="'tf32'",
        policy=policy)


def test_an_fp16_problem_is_not_judged_by_the_fp32_rule():
    assert "static.precision_mismatch" not in flags_of("tl.dot(a, b)", dtype="float16")


# -- the offline synthesizer's output at every policy it offers -------------------------

DOT_PROBLEMS = ("linear_gelu", "gemm_bias_relu", "conv2d_relu", "softmax")


@pytest.fixture(scope="module")
def synthesizer():
    from search_engine.synthesis.offline import OfflineSynthesizer

    return OfflineSynthesizer()


@pytest.mark.parametrize("name", DOT_PROBLEMS)
@pytest.mark.parametrize("policy", ["strict", "tf32", "bf16"])
def test_every_offline_proposal_passes_the_static_checks(synthesizer, name, policy):
    from search_engine.hardware import get_target
    from search_engine.synthesis.base import MemoryView, NodeView, SynthesisRequest
    from tests.search_engine.synthesis.conftest import library_source

    source = library_source(name)
    dtype = "float32"
    root = NodeView(id=0, source=source, origin={"synthesizer": "reference"}, status="reference")

    def ask(parent):
        return synthesizer.propose(SynthesisRequest(
            problem_source=source, target=get_target("h200"), parent=parent,
            memory=MemoryView("trajectory"), precision_policy=policy), 6, random.Random(0))

    fresh = ask(root)
    assert fresh
    moved = []
    for proposal in fresh[:2]:  # every move from the template and from a random start
        parent = NodeView(id=1, source=proposal.source, status="correct",
                          origin={"synthesizer": "offline", "params": proposal.params},
                          diagnostics={"bottleneck": {"class": "compute-bound", "reason": "x"}})
        moved += ask(parent)
    for proposal in fresh + moved:
        hacks = [f for f in run_static_checks(proposal.source, dtype, policy)
                 if f.severity == "hack"]
        assert not hacks, (proposal.transformation, proposal.params, hacks)
