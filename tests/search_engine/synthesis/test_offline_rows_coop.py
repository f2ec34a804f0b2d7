"""The rows family's coop variant (`writers/rows_coop.py`): a long row read once, its
segments kept in registers while the programs of the row exchange partial results.

On the interpreter, programs run one after another, so a row's programs cannot wait for
each other there: these tests run the kernel with one program a row (every pass's
publish, count-in, wait, combine and the prefetch of the next row still run) over a
persistent grid of fewer groups than rows, against the reference; the space offers the
variant only for rows too long for one program's registers, and prunes it off the GPU."""

from __future__ import annotations

import random

import pytest
import torch

from search_engine.evaluation.integrity.static_checks import run_static_checks
from search_engine.hardware import get_target
from search_engine.synthesis.offline.spaces import templates
from search_engine.synthesis.offline.synthesizer import checked_render

from .conftest import load_candidate, load_problem, traced_analysis
from .test_offline_staged import problem

ROW_PROBLEMS = {
    "softmax": problem("", "torch.softmax(x, dim=1)", "torch.randn(7, 45)"),
    "log_softmax": problem("", "torch.log_softmax(x * 2.0, dim=-1)", "torch.randn(7, 45)"),
    "layernorm_affine": problem("self.ln = nn.LayerNorm(45)", "self.ln(x)",
                                "torch.randn(7, 45)"),
    "rmsnorm": problem("", "x / torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + 1e-5)",
                       "torch.randn(7, 45)"),
    # two passes: the mean, then the largest deviation from it
    "centred_over_max_deviation": problem(
        "", "(x - x.mean(dim=1, keepdim=True)) / "
            "torch.amax(torch.abs(x - x.mean(dim=1, keepdim=True)), dim=1, keepdim=True)",
        "torch.randn(7, 45)"),
    # a full reduction: one row of every element, one value out
    "mse": problem("", "torch.mean((x - y) ** 2)", "torch.randn(6, 45), torch.randn(6, 45)",
                   args="x, y"),
}


def _coop(source: str, ahead: int = 0):
    an = traced_analysis(source)
    assert an.family == "rows"
    # one segment a row: the interpreter runs a row's programs one after another, so the
    # first would wait for the others for ever
    block = 1 << (templates.row_length(an) - 1).bit_length()
    params = {"variant": "coop", "ROWS": 1, "BLOCK_R": block, "num_warps": 4, "SPLIT": 1,
              "COOP_AHEAD": ahead}
    return an, checked_render(source, an, params)


@pytest.mark.parametrize("name", sorted(ROW_PROBLEMS))
@pytest.mark.parametrize("groups", [1, 3])
@pytest.mark.parametrize("ahead", [0, 1])
def test_the_coop_kernel_matches_the_reference_over_a_persistent_grid(name, groups, ahead,
                                                                     tmp_path):
    source = ROW_PROBLEMS[name]
    an, candidate = _coop(source, ahead)
    assert "tl.atomic_add(cnt_ptr" in candidate and "nx" in candidate  # waits, prefetches
    # one pass is published a row ahead of its wait; two passes keep the plain form
    published_ahead = "the next row: its segment, partials, count-in" in candidate
    assert published_ahead == bool(ahead and name != "centred_over_max_deviation")
    _check_coop(source, candidate, groups, tmp_path)


@pytest.mark.parametrize("ahead", [0, 1])
def test_the_bench_polling_with_loads_is_the_same_kernel(ahead, tmp_path):
    """`default_kernels_bench.load_poll` (an experiment): plain loads poll the counter, one
    acquire after; every pass's wait rewritten, and the kernel still right."""
    from search_engine.synthesis.offline.default_kernels_bench import load_poll

    source = ROW_PROBLEMS["centred_over_max_deviation" if not ahead else "layernorm_affine"]
    _, candidate = _coop(source, ahead)
    polled = load_poll(candidate)
    waits = candidate.count("while (seen < SPLIT)")
    assert waits == (2 if not ahead else 1)
    assert polled.count("volatile=True)\n") >= waits and polled.count(
        "seen = tl.atomic_add(") == candidate.count("seen = tl.atomic_add(")
    assert run_static_checks(polled) == []
    _check_coop(source, polled, 3, tmp_path)


def _check_coop(source: str, candidate: str, groups: int, tmp_path) -> None:
    assert run_static_checks(candidate) == []
    module = load_candidate(candidate, tmp_path)
    # the grid the GPU would size from registers: here `groups` groups of one program
    module.kh_coop_groups = lambda kernel, args, consts, split, n_rows: min(n_rows, groups)
    ref_module = load_problem(source)
    torch.manual_seed(0)
    reference = ref_module.Model().eval()
    candidate_model = module.ModelNew().eval()
    candidate_model.load_state_dict(reference.state_dict())
    inputs = ref_module.get_inputs()
    with torch.no_grad():
        expected = reference(*[x.clone() for x in inputs])
        got = candidate_model(*[x.clone() for x in inputs])
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


LONG_SOFTMAX = problem("", "torch.softmax(x, dim=1)", "torch.randn(600, 20000)")


def _long_softmax():
    return traced_analysis(LONG_SOFTMAX)


def test_a_long_row_is_coop_by_default_on_a_gpu_and_online_on_the_interpreter():
    an = _long_softmax()
    gpu = templates.default_params(an, "h200", "strict")
    assert gpu["variant"] == "coop" and gpu["SPLIT"] == 3
    assert templates.resource_problem(an, gpu, get_target("h200")) == ""
    assert templates.default_params(an, "interpreter", "strict")["variant"] == "online"
    # where the coop segments would spill (two full operands held twice), it stays online
    two = traced_analysis(problem("", "torch.softmax(x + y, dim=1)",
                                  "torch.randn(600, 20000), torch.randn(600, 20000)", "x, y"))
    assert templates.default_params(two, "h200", "strict")["variant"] == "online"


def test_the_coop_default_is_measured_per_target_and_ahead_is_a_move():
    an = _long_softmax()
    h100 = templates.default_params(an, "h100", "strict")
    assert (h100["variant"], h100["BLOCK_R"], h100["num_warps"], h100["COOP_AHEAD"]) == \
        ("coop", 4096, 8, 1)
    h200 = templates.default_params(an, "h200", "strict")
    assert (h200["BLOCK_R"], h200["num_warps"], h200.get("COOP_AHEAD", 0)) == (8192, 4, 0)
    ahead = templates.apply_move(an, h200, "coop_ahead")
    assert ahead["COOP_AHEAD"] == 1 and templates.apply_move(an, ahead, "coop_ahead") is None
    assert templates.apply_move(an, ahead, "coop_plain")["COOP_AHEAD"] == 0
    online = templates.default_params(an, "interpreter", "strict")
    assert templates.apply_move(an, online, "coop_ahead") is None  # only coop rows wait
    source = checked_render(LONG_SOFTMAX, an, ahead)
    assert "the next row: its segment, partials, count-in" in source


def test_a_long_row_moves_to_coop_on_a_gpu_and_is_pruned_on_the_interpreter():
    an = _long_softmax()
    parent = {**templates.default_params(an, "h200", "strict"), "variant": "online",
              "BLOCK_R": 4096, "num_warps": 8, "SPLIT": 1}
    child = templates.apply_move(an, parent, "to_coop")
    assert child["variant"] == "coop" and child["BLOCK_R"] == templates.COOP_BLOCK_R
    assert child["SPLIT"] == 3  # 20000 elements in segments of 8192
    assert templates.resource_problem(an, child, get_target("h200")) == ""
    assert "interpreter" in templates.resource_problem(an, child, get_target("interpreter"))
    # an online parent's first memory move (a looped one goes online first)
    moves = templates.ordered_moves(an, "memory", "strict", random.Random(0), parent)
    assert [m for m in moves if templates.apply_move(an, parent, m)][0] == "to_coop"
    source = checked_render(LONG_SOFTMAX, an, child)
    assert run_static_checks(source) == []
    assert "kh_coop_groups(fused_rows_kernel" in source


def test_coop_is_not_offered_where_it_cannot_pay_or_cannot_run():
    short = traced_analysis(ROW_PROBLEMS["softmax"])  # a row that fits one program
    assert templates.apply_move(short, templates.default_params(short, "h200", "strict"),
                                "to_coop") is None
    argmax = traced_analysis(problem("", "torch.argmax(x, dim=1)", "torch.randn(3, 20000)"))
    assert templates.apply_move(argmax, templates.default_params(argmax, "h200", "strict"),
                                "to_coop") is None
    # segments too wide for four warps' registers (two copies of each operand's segment)
    an = _long_softmax()
    wide = templates.clamp(an, {**templates.default_params(an, "h200", "strict"),
                                "BLOCK_R": 16384, "num_warps": 2})
    assert wide["variant"] == "coop"
    assert "spill" in templates.resource_problem(an, wide, get_target("h200"))
    # a row of more segments than the chip holds programs
    huge = traced_analysis(problem("", "torch.softmax(x, dim=1)", "torch.randn(2, 1 << 24)"))
    many = templates.clamp(huge, {**templates.default_params(huge, "h200", "strict"),
                                  "variant": "coop", "BLOCK_R": 4096, "num_warps": 4})
    assert many["SPLIT"] == 4096
    assert "on the chip at once" in templates.resource_problem(huge, many, get_target("h200"))
    # a row of 512 segments that the thread count alone would let through, but whose
    # programs' registers do not fit the chip at once (it failed at run time on the H100
    # and the H200 before this check); the softmax's 48 segments still pass
    wide_norm = traced_analysis(problem("self.ln = nn.LayerNorm((64, 256, 256))", "self.ln(x)",
                                        "torch.randn(16, 64, 256, 256)"))
    norm = templates.clamp(wide_norm, {**templates.default_params(wide_norm, "h200", "strict"),
                                       "variant": "coop", "BLOCK_R": 8192, "num_warps": 4})
    assert norm["SPLIT"] == 512
    assert "registers" in templates.resource_problem(wide_norm, norm, get_target("h200"))
    softmax = traced_analysis(problem("", "torch.softmax(x, dim=1)", "torch.randn(4096, 393216)"))
    assert templates.resource_problem(softmax, templates.default_params(softmax, "h200",
                                                                        "strict"),
                                      get_target("h200")) == ""


def test_random_draws_never_pick_coop():
    an = _long_softmax()
    base = templates.default_params(an, "interpreter", "strict")
    rng = random.Random(1)
    assert all(templates.random_params(an, base, rng)["variant"] != "coop" for _ in range(200))


GPU_ROWS = {  # rows of several segments (SPLIT > 1): the programs of a row really wait
    "softmax": ("torch.softmax(x, dim=1)", "", "torch.randn(300, 50000)"),
    "log_softmax": ("torch.log_softmax(x, dim=1)", "", "torch.randn(300, 50000)"),
    "layernorm_affine": ("self.ln(x)", "self.ln = nn.LayerNorm(40000)",
                         "torch.randn(200, 40000)"),
    "two_passes": ("(x - x.mean(dim=1, keepdim=True)) / torch.amax(torch.abs(x - x.mean("
                   "dim=1, keepdim=True)), dim=1, keepdim=True)", "", "torch.randn(257, 33000)"),
}


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("name", sorted(GPU_ROWS))
@pytest.mark.parametrize("ahead", [0, 1])
def test_the_coop_kernel_on_a_gpu_with_rows_of_several_segments(name, ahead, tmp_path):
    forward, init, inputs = GPU_ROWS[name]
    source = problem(init, forward, inputs)
    an = traced_analysis(source)
    # few rows (their default is split rows), so the move makes the coop child
    child = templates.apply_move(an, templates.default_params(an, "h200", "strict"), "to_coop")
    assert child["variant"] == "coop" and child["SPLIT"] > 1
    child["COOP_AHEAD"] = ahead
    candidate = checked_render(source, an, child)
    module = load_candidate(candidate, tmp_path)
    ref_module = load_problem(source)
    reference = ref_module.Model().cuda().double()
    model = module.ModelNew().cuda()
    model.load_state_dict({k: v.float() for k, v in reference.state_dict().items()})
    x = ref_module.get_inputs()[0].cuda()
    with torch.no_grad():
        expected = reference(x.double())
        for _ in range(3):  # fresh counters each call
            got = model(x)
            err = (got.double() - expected).norm() / expected.norm()
            assert err < 1e-5, (name, float(err))
