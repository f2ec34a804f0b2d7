"""Few, long rows (LayerNorm over 64x256x256 with 16 rows, whole-row RMSNorm) are split over
many programs in both passes: per-lane partials, no block reduction inside a chunk loop, a
combine of the partials, and a normalising pass on the same grid. The split design is the
default for them only (short rows keep their kernels), its moves tune the split, and it is
exact to the strict fp32 tolerance (interpreter, small rows and small chunks)."""

import random
import re

import pytest
import torch

from search_engine.synthesis.offline import OfflineSynthesizer
from search_engine.synthesis.offline.default_kernels_bench import PROBLEMS
from search_engine.synthesis.offline.spaces import templates

from .conftest import load_problem
from .test_offline_templates import no_torch_math, problem

STRICT_REL_L2 = 1e-5
SMALL_SPLIT = {"variant": "split", "BLOCK_R": 256, "SPLIT": 8, "num_warps": 4}

LAYERNORM_AFFINE = problem("self.ln(x)", "torch.randn(2, 8, 1024)",
                           "self.ln = nn.LayerNorm((8, 1024))\n"
                           "nn.init.normal_(self.ln.weight)\nnn.init.normal_(self.ln.bias)")
LAYERNORM_PLAIN = problem("F.layer_norm(x, x.shape[1:])", "torch.randn(2, 8192) * 3.0 + 40.0")
RMSNORM_ROW = problem("x / torch.sqrt(torch.mean(x ** 2, dim=(1, 2), keepdim=True) + 1e-5)",
                      "torch.randn(2, 32, 256)")
RMSNORM_WEIGHT = problem("x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w",
                         "torch.randn(2, 8190)", "self.w = nn.Parameter(torch.randn(8190))")
SOFTMAX_ROW = problem("torch.softmax(x, dim=-1)", "torch.randn(2, 8192)")


def strict_error(source: str, got: torch.Tensor) -> float:
    """Relative L2 error of `got` against the problem in fp64 (the evaluator's strict check)."""
    module = load_problem(source)
    torch.manual_seed(0)
    model = module.Model(*module.get_init_inputs()).double()
    torch.manual_seed(1)
    with torch.no_grad():
        ref = model(*[x.double() for x in module.get_inputs()])
    return float(torch.linalg.vector_norm(got.double() - ref) / torch.linalg.vector_norm(ref))


def rendered(source: str, change: dict, target: str = "interpreter"):
    syn = OfflineSynthesizer()
    an = syn.analysis(source)
    params = templates.clamp(an, {**templates.default_params(an, target, "strict"), **change})
    assert templates.valid(an, params)
    return an, params, syn.render(source, params)


def launch_grids(candidate: str, an) -> list[tuple[int, int]]:
    """Each launch's 2-D grid at the traced shape: a row count that follows the batch is an
    expression of the call's batch `kh_B` (the module takes any batch size)."""
    batch = next(n.shape[0] for n in an.nodes.values() if n.op == "input")
    return [(int(eval(rows, {"kh_B": batch})), int(split))  # noqa: S307 - our own render
            for rows, split in re.findall(r"\w+\[\(([\w* +]+), (\d+)\)\]\(", candidate)]


def kernel_text(candidate: str, name: str) -> str:
    start = candidate.index(f"def {name}(")
    end = candidate.find("@triton.jit", start)
    return candidate[start: end if end > 0 else None]


def loop_body(kernel: str) -> list[str]:
    lines = kernel.splitlines()
    head = next(n for n, line in enumerate(lines) if line.strip().startswith("for start in"))
    indent = len(lines[head]) - len(lines[head].lstrip()) + 4
    body = []
    for line in lines[head + 1:]:
        if len(line) - len(line.lstrip()) < indent:
            break
        body.append(line)
    return body


def assert_split_design(an, params, candidate):
    """Many programs per row in both passes, short segments, no per-chunk block reduction."""
    rows = templates.row_count(an)
    length = templates.row_length(an)
    assert params["variant"] == "split"
    assert rows * params["SPLIT"] >= templates.PROGRAMS_PER_SM * 132
    segment = int(re.search(r"SEG=(\d+)", candidate).group(1))
    assert segment <= templates.SPLIT_CHUNKS_PER_PROGRAM * params["BLOCK_R"] or \
        params["SPLIT"] == templates.SPACES["rows"]["SPLIT"][-1]
    assert segment * params["SPLIT"] >= length
    grids = launch_grids(candidate, an)
    assert len(grids) >= 2 and set(grids) == {(rows, params["SPLIT"])}
    first = loop_body(kernel_text(candidate, "fused_rows_kernel_pass0"))
    assert first and not any("tl.sum(" in line or "tl.max(" in line for line in first)


def test_the_bench_layernorm_defaults_to_many_programs_per_row_in_both_passes():
    source = PROBLEMS["layernorm"][0]  # KernelBench L1 #40: nn.LayerNorm((64, 256, 256))
    an, params, candidate = rendered(source, {}, target="h200")
    assert_split_design(an, params, candidate)
    assert params["SPLIT"] * templates.row_count(an) >= 4096  # 16 rows x 256 segments
    # weight and bias are read at the row's flat index: vector loads, no per-dim strides
    assert "tl.load(in1_ptr + cols," in candidate and "tl.load(in2_ptr + cols," in candidate
    assert "kh_st1" not in candidate and "red_c_" not in candidate


@pytest.mark.parametrize("source", [
    problem("F.layer_norm(x, x.shape[1:])", "torch.randn(8, 64, 4096)"),
    problem("x / torch.sqrt(torch.mean(x ** 2, dim=(1, 2), keepdim=True) + 1e-5)",
            "torch.randn(16, 64, 4096)"),
    problem("torch.softmax(x, dim=-1)", "torch.randn(4, 1048576)"),
])
def test_every_long_few_row_norm_defaults_to_the_split_design(source):
    an, params, candidate = rendered(source, {}, target="h200")
    assert_split_design(an, params, candidate)


@pytest.mark.parametrize("source, variant", [
    (problem("F.layer_norm(x, x.shape[1:])", "torch.randn(16, 4096)"), "single"),
    # many long rows: read once by cooperating programs on a GPU (rows_coop)
    (problem("torch.softmax(x, dim=-1)", "torch.randn(1024, 65536)"), "coop"),
    (problem("x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)",
             "torch.randn(2, 64, 16, 32)"), "single"),
])
def test_short_or_many_rows_keep_their_kernels(source, variant):
    an, params, candidate = rendered(source, {}, target="h200")
    assert params["variant"] == variant and "_pass0[" not in candidate


@pytest.mark.parametrize("source", [LAYERNORM_AFFINE, LAYERNORM_PLAIN, RMSNORM_ROW,
                                    RMSNORM_WEIGHT, SOFTMAX_ROW])
@pytest.mark.parametrize("split", [8, 16])
def test_split_rows_are_correct_to_the_strict_tolerance(source, split, run):
    # 8190-long rows and 16 segments: a partial last chunk and segments left empty
    an, params, candidate = rendered(source, {**SMALL_SPLIT, "SPLIT": split})
    assert_split_loops_reduce_per_lane(candidate)
    expected, got, launched = run(source, candidate)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert len(launched) >= 2 and no_torch_math(candidate)
    assert strict_error(source, got) <= STRICT_REL_L2


def assert_split_loops_reduce_per_lane(candidate):
    for name in re.findall(r"def (fused_rows_kernel_pass\d+)\(", candidate):
        assert not any("tl.sum(" in line for line in loop_body(kernel_text(candidate, name)))


@pytest.mark.parametrize("block, split", [(2048, 32), (256, 2)])
def test_mean_and_variance_of_a_million_element_row_stay_strict(block, split, run):
    # mean 50, std 0.5, and (256, 2) puts 2048 values in each lane: sums of squares minus
    # the squared mean would lose the variance's digits; sums shifted by each lane's first
    # value, merged with Chan's formula, keep them
    source = problem("F.layer_norm(x, x.shape[1:])", "torch.randn(2, 1 << 20) * 0.5 + 50.0")
    an, params, candidate = rendered(source, {"variant": "split", "BLOCK_R": block,
                                              "SPLIT": split})
    expected, got, _ = run(source, candidate)
    assert strict_error(source, got) <= STRICT_REL_L2


def test_moves_tune_the_split_and_its_chunks():
    source = problem("F.layer_norm(x, x.shape[1:])", "torch.randn(2, 8, 64, 64)")
    an, params, _ = rendered(source, {}, target="h200")
    up = templates.apply_move(an, params, "split_up")
    down = templates.apply_move(an, params, "split_down")
    assert down["SPLIT"] == params["SPLIT"] // 2 and down["variant"] == "split"
    assert up is None  # one 2048-element chunk per program already: no finer split
    chunks = templates.apply_move(an, params, "chunk_down")
    assert chunks["BLOCK_R"] == params["BLOCK_R"] // 2
    finer = templates.apply_move(an, chunks, "split_up")
    assert finer["SPLIT"] == 2 * params["SPLIT"]
    syn = OfflineSynthesizer()
    assert (2, finer["SPLIT"]) in launch_grids(syn.render(source, finer), syn.analysis(source))
    memory = templates.ordered_moves(an, "memory", "strict", random.Random(0))
    preferred = [m for m in templates.MOVES_BY_DIAGNOSIS["memory"] if m in templates.MOVES["rows"]]
    assert {"split_up", "split_down"} <= set(memory[:len(preferred)])


def test_the_bench_split_can_grow_past_256_segments():
    source = PROBLEMS["layernorm"][0]
    an, params, _ = rendered(source, {}, target="h200")
    assert templates.apply_move(an, params, "split_up")["SPLIT"] == 2 * params["SPLIT"]


def test_split_rows_past_two_billion_elements_address_in_64_bits():
    source = problem("F.layer_norm(x, x.shape[1:])", "torch.randn(2, 1 << 30)")
    an, params, candidate = rendered(source, {}, target="h200")
    assert params["variant"] == "split"
    assert candidate.count("base = outer.to(tl.int64) * R * INNER + inner") == 2
    small = rendered(LAYERNORM_PLAIN, SMALL_SPLIT)[2]
    assert "tl.int64" not in small  # 32-bit offsets where they suffice
