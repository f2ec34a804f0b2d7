"""Pooling stages (`writers/pooling.py`) in both layouts: one lane per output, or one
program per output row's block with the row's indices split once from the program id and
the window's last dim loaded as a tile axis.

Each case runs against torch in both layouts at two block sizes (blocks smaller than the
row, a block larger than the tile budget allows, a window wider than a power of two); the
row tile is checked for what makes it fast (no division of a per-output vector), and the
default layout per pool rank is the measured one."""

from __future__ import annotations

import re

import pytest
import torch

from search_engine.synthesis.offline.spaces import staged
from search_engine.synthesis.offline.writers import pooling

from .conftest import run_candidate
from .test_offline_staged import local_analysis, problem

CASES = {
    "max2d_pad_stride": ("self.p = nn.MaxPool2d(4, stride=2, padding=1)", "self.p(x)",
                         "torch.randn(2, 3, 13, 37)"),
    "avg2d_wide_window": ("self.p = nn.AvgPool2d(11)", "self.p(x)", "torch.randn(2, 2, 23, 45)"),
    "avg1d_overlapping_padded": ("self.p = nn.AvgPool1d(8, stride=1, padding=4)", "self.p(x)",
                                 "torch.randn(3, 4, 70)"),
    "max1d_dilated": ("self.p = nn.MaxPool1d(4, stride=2, padding=2, dilation=3)", "self.p(x)",
                      "torch.randn(2, 4, 33)"),
    "max3d_dilated_ceil": ("self.p = nn.MaxPool3d(3, stride=2, padding=1, dilation=2, "
                           "ceil_mode=True)", "self.p(x)", "torch.randn(2, 2, 9, 8, 11)"),
    "avg3d_exclude_pad": ("self.p = nn.AvgPool3d((2, 3, 5), stride=(1, 2, 3), padding=(1, 1, 2),"
                          " count_include_pad=False)", "self.p(x)",
                          "torch.randn(1, 3, 6, 7, 17)"),
    "avg2d_divisor": ("self.p = nn.AvgPool2d(3, stride=2, padding=1, divisor_override=4)",
                      "self.p(x)", "torch.randn(2, 3, 9, 12)"),
    # one output row: its index is the literal 0 in the divisor
    "avg2d_one_output_row": ("self.p = nn.AvgPool2d(3, stride=1, padding=(0, 1))", "self.p(x)",
                             "torch.randn(2, 3, 3, 8)"),
    "adaptive_uneven": ("self.p = nn.AdaptiveAvgPool2d((3, 5))", "self.p(x)",
                        "torch.randn(2, 3, 10, 17)"),
    # a pointwise op before the pool (read through the expression) and a channel bias after
    "relu_pool_bias": ("self.p = nn.MaxPool2d(3, stride=2)\n"
                       "self.b = nn.Parameter(torch.randn(3, 1, 1))",
                       "self.p(torch.relu(x)) + self.b", "torch.randn(2, 3, 15, 19)"),
}
LAYOUTS = [{"POOL_TILE": tile, "BLOCK": block} for tile in (0, 1, 2) for block in (16, 4096)]


@pytest.mark.parametrize("layout", range(len(LAYOUTS)))
@pytest.mark.parametrize("name", sorted(CASES))
def test_pooling_matches_torch_in_every_layout(name, layout, tmp_path):
    source = problem(*CASES[name])
    an = local_analysis(source)
    params = {**staged.default_params(an, "interpreter", "strict"), **LAYOUTS[layout]}
    candidate = staged.render(source, an, params)
    expected, got, launched = run_candidate(source, candidate, tmp_path)
    assert launched
    torch.testing.assert_close(got.double(), expected.double(), atol=1e-5, rtol=1e-5)


def _pool_kernel(candidate: str) -> str:
    start = candidate.index("def kh_stage0_pool(")
    return candidate[start:candidate.index("\n\n", start)]


def _divides_only_scalars(kernel: str) -> None:
    for line in kernel.splitlines():
        for divided in re.findall(r"\(\(?(\w+)\)?\) //|\b(\w+) //", line):
            assert set(divided) <= {"row", "w", ""}, line  # scalars only


@pytest.mark.parametrize("name", sorted(set(CASES) - {"adaptive_uneven"}))
def test_the_row_tile_divides_no_per_output_index(name):
    source = problem(*CASES[name])
    an = local_analysis(source)
    params = {**staged.default_params(an, "h200", "strict"), "BLOCK": 4096, "POOL_TILE": 1}
    kernel = _pool_kernel(staged.render(source, an, params))
    _divides_only_scalars(kernel)
    assert "kk[None, :]" in kernel and "axis=1" in kernel
    # the tile stays within the register budget however large BLOCK is asked to be
    block = int(re.search(r"BLOCK=(\d+)", staged.render(source, an, params)).group(1))
    width = int(re.search(r"kk = tl.arange\(0, (\d+)\)", kernel).group(1))
    assert block * width <= pooling.TILE_ELEMENTS


@pytest.mark.parametrize("name", sorted(set(CASES) - {"adaptive_uneven"}))
def test_row_taps_load_each_tap_along_the_row_with_no_division_per_output(name):
    """`ROW_TAPS`: the row tile's scalar row indices, the flat layout's one-dimensional
    loads (one a tap, a lane an output): no tile axis to reduce across."""
    source = problem(*CASES[name])
    an = local_analysis(source)
    params = {**staged.default_params(an, "h200", "strict"), "POOL_TILE": pooling.ROW_TAPS}
    rendered = staged.render(source, an, params)
    kernel = _pool_kernel(rendered)
    _divides_only_scalars(kernel)
    assert "row = tl.program_id(0)" in kernel and "ol = tl.program_id(1) * BLOCK" in kernel
    assert "kk" not in kernel and "axis=1" not in kernel and "[:, None]" not in kernel
    block = int(re.search(r"BLOCK=(\d+)", rendered).group(1))
    assert block <= 32 * params["num_warps"]  # unrolled windows: one output a thread
    assert re.search(r"_pool\[\([^\[\]]+, triton\.cdiv\(\d+, \d+\)\)\]", rendered)  # (rows, blocks)


def test_row_taps_load_unmasked_exactly_where_every_window_is_inside(tmp_path):
    """A row block whose windows all lie inside the input walks them with a constant mask
    (Triton drops it and merges neighbouring taps into wide loads); the edge blocks keep
    the bounds. Spoiling the inside walk spoils exactly the blocks inside."""
    source = problem(*CASES["avg1d_overlapping_padded"])  # 71 outputs a row, padding 4
    an = local_analysis(source)
    params = {**staged.default_params(an, "interpreter", "strict"),
              "POOL_TILE": pooling.ROW_TAPS, "BLOCK": 16}
    candidate = staged.render(source, an, params)
    inside, edge = _pool_kernel(candidate).split("    else:\n")
    assert "tmask = tl.full([BLOCK], 1, tl.int1)" in inside and "vmask = tmask" in inside
    assert "(i0 >= 0)" not in inside and "(i0 >= 0)" in edge
    (tmp_path / "clean").mkdir(), (tmp_path / "spoiled").mkdir()
    expected, got, _ = run_candidate(source, candidate, tmp_path / "clean")
    torch.testing.assert_close(got.double(), expected.double(), atol=1e-5, rtol=1e-5)
    spoiled = candidate.replace("acc += tl.where(vmask, e1, 0.0)", "acc += 1000.0", 1)
    expected, got, _ = run_candidate(source, spoiled, tmp_path / "spoiled")
    columns = ((got - expected).abs() > 1).nonzero()[:, -1].unique().tolist()
    assert columns == list(range(16, 64))  # blocks 1-3: block 0 reads the padding, 4 the end


@pytest.mark.parametrize("pool, shape, inside", [
    ("nn.MaxPool3d(3, stride=2, padding=1, dilation=3)", "(1, 2, 32, 32, 128)", False),  # 62 a row
    ("nn.AdaptiveAvgPool1d(100)", "(2, 4, 4096)", False),
    ("nn.MaxPool2d(4, stride=2, padding=1)", "(1, 2, 64, 2048)", True),
    ("nn.AvgPool1d(8, stride=1, padding=4)", "(1, 2, 1024)", False),  # 2 blocks, both edges
    ("nn.AvgPool1d(8, stride=1, padding=4)", "(1, 2, 4096)", True)])
def test_row_taps_walk_an_inside_path_only_where_a_block_can_be_inside(pool, shape, inside):
    source = problem(f"self.p = {pool}", "self.p(x)", f"torch.randn{shape}")
    an = local_analysis(source)
    params = {**staged.default_params(an, "h200", "strict"), "POOL_TILE": pooling.ROW_TAPS}
    kernel = _pool_kernel(staged.render(source, an, params))
    assert ("tmask = tl.full(" in kernel) == inside and ("else:" in kernel) == inside


@pytest.mark.parametrize("pool, length, block, warps", [
    ("nn.AvgPool1d(8, stride=1, padding=4)", 65536, 512, 4),  # 4 outputs a thread
    ("nn.MaxPool1d(8, stride=1, padding=4, dilation=3)", 65536, 1024, 8),
    ("nn.MaxPool2d(4, stride=2, padding=1)", 512, 256, 4),  # 16 taps: 2 a thread
    ("nn.AvgPool1d(4)", 100, 32, 1)])  # a short row: no warp without an output
def test_row_taps_give_a_thread_neighbouring_outputs_within_the_tap_budget(pool, length,
                                                                          block, warps):
    shape = f"(2, 4, {length})" if "1d" in pool else f"(2, 4, {length}, {length})"
    source = problem(f"self.p = {pool}", "self.p(x)", f"torch.randn{shape}")
    an = local_analysis(source)
    params = {**staged.default_params(an, "h200", "strict"), "POOL_TILE": pooling.ROW_TAPS,
              "BLOCK": 2048, "num_warps": 8 if block == 1024 else 4}
    rendered = staged.render(source, an, params)
    assert f"BLOCK={block}, num_warps={warps}" in rendered, rendered[rendered.index("_pool["):]


@pytest.mark.parametrize("name, tile, trips", [
    ("max3d_dilated_ceil", 2, 27), ("avg2d_wide_window", 2, 121),
    ("max3d_dilated_ceil", 0, 27), ("max3d_dilated_ceil", 1, 9), ("avg2d_wide_window", 0, 121),
    ("avg2d_wide_window", 1, 11), ("adaptive_uneven", 0, None)])
def test_small_windows_are_unrolled_with_their_bases_computed_once(name, tile, trips):
    """A window of at most UNROLL_TAPS taps is a `tl.static_range` (the taps' offsets fold
    to constants); a larger one stays a rolled loop. Either way each dim's window start is
    computed once, before the loop, and a tap only adds its offset to it."""
    source = problem(*CASES[name])
    an = local_analysis(source)
    params = {**staged.default_params(an, "h200", "strict"), "POOL_TILE": tile}
    kernel = _pool_kernel(staged.render(source, an, params))
    header = re.search(r"for w in (tl\.static_range|range)\((\d+)\):", kernel)
    if trips is not None:
        assert int(header.group(2)) == trips
    rolled = int(header.group(2)) > pooling.UNROLL_TAPS
    assert header.group(1) == ("range" if rolled else "tl.static_range"), kernel
    loop = kernel[header.end():]
    assert "wbeg0 = " in kernel[:header.start()] and "wbeg0 = " not in loop
    for line in loop.splitlines():
        if re.match(r"\s+i\d = ", line):  # the base plus this tap's (dilated) offset
            assert re.fullmatch(r"\s+i(\d) = wbeg\1 \+ k\d+( \* \d+)?", line), line


def test_the_layout_default_is_the_measured_one_and_the_flat_block_is_capped():
    one_d = local_analysis(problem(*CASES["avg1d_overlapping_padded"]))
    two_d = local_analysis(problem(*CASES["max2d_pad_stride"]))
    one_d_params = staged.default_params(one_d, "h200", "strict")
    assert (one_d_params["POOL_TILE"], one_d_params["num_warps"]) == (pooling.ROW_TAPS, 8)
    assert staged.default_params(two_d, "h200", "strict")["POOL_TILE"] == 0
    assert staged.default_params(two_d, "h200", "strict")["num_warps"] == 4
    # the interpreter keeps 4 warps; a conv beside a 1-D pool keeps the conv's warps
    assert staged.default_params(one_d, "interpreter", "strict")["num_warps"] == 4
    conv_pool = local_analysis(problem(
        "self.c = nn.Conv1d(3, 8, 3)\nself.p = nn.MaxPool1d(3, stride=2)",
        "self.p(self.c(x))", "torch.randn(2, 3, 64)"))
    conv_params = staged.default_params(conv_pool, "h200", "strict")
    assert (conv_params["POOL_TILE"], conv_params["num_warps"]) == (pooling.ROW_TAPS, 4)
    source = problem("self.p = nn.AvgPool2d(6)", "self.p(x)", "torch.randn(2, 3, 64, 64)")
    an = local_analysis(source)
    rendered = staged.render(source, an, {**staged.default_params(an, "h200", "strict"),
                                          "BLOCK": 2048})
    assert f"BLOCK={pooling.FLAT_BLOCK}," in rendered  # a rolled window (36 taps)


@pytest.mark.parametrize("pool, shape", [
    ("nn.MaxPool2d(4, stride=2, padding=1)", "(1, 2, 64, 1024)"),
    ("nn.MaxPool3d(3, stride=2, dilation=3)", "(1, 1, 16, 16, 1024)"),
    ("nn.AvgPool3d(3, stride=2, padding=1)", "(1, 1, 16, 16, 1024)")])
@pytest.mark.parametrize("warps", [4, 8])
def test_an_unrolled_flat_window_takes_one_output_a_thread(pool, shape, warps):
    """Two outputs a thread with every tap's load in flight ran MaxPool3d at half its speed
    (registers): an unrolled window's program holds 32 outputs a warp."""
    source = problem(f"self.p = {pool}", "self.p(x)", f"torch.randn{shape}")
    an = local_analysis(source)
    params = {**staged.default_params(an, "h200", "strict"), "POOL_TILE": 0, "BLOCK": 1024,
              "num_warps": warps}
    rendered = staged.render(source, an, params)
    assert f"BLOCK={32 * warps}," in rendered and "tl.static_range(" in rendered


@pytest.mark.parametrize("pool, shape, block", [
    ("nn.AvgPool2d(6, stride=2, padding=1)", "(1, 2, 64, 1024)", 256),  # 12 KiB of windows
    ("nn.AvgPool2d(11)", "(1, 2, 64, 4096)", 128),  # 124 KiB at 256, 62 KiB at 128
    ("nn.AvgPool2d(32)", "(1, 1, 64, 16384)", 32),  # never below a warp
    ("nn.MaxPool3d((4, 3, 3), stride=2, dilation=3)", "(1, 1, 16, 16, 1024)", 256),
])
def test_the_flat_block_keeps_its_windows_within_the_l1_footprint(pool, shape, block):
    source = problem(f"self.p = {pool}", "self.p(x)", f"torch.randn{shape}")
    an = local_analysis(source)
    params = {**staged.default_params(an, "h200", "strict"), "POOL_TILE": 0, "BLOCK": 1024}
    assert f"BLOCK={block}," in staged.render(source, an, params)


@pytest.mark.parametrize("name", ["avg1d_overlapping_padded", "max3d_dilated_ceil"])
def test_a_pool_short_of_bandwidth_tries_the_row_taps_first(name):
    """Diagnosed memory- or latency-bound, a pool's first move is the row-taps layout from
    whichever other layout it has (the flat layout, the row tile); from the row taps (the
    1-D default) it is not; other diagnoses reach it later, a problem without a pool never."""
    import random

    an = local_analysis(problem(*CASES[name]))
    rng = random.Random(0)
    for tile in (pooling.FLAT, pooling.ROW_TILE):
        params = {**staged.default_params(an, "h200", "strict"), "POOL_TILE": tile}
        for diagnosis in ("memory", "latency"):
            first = staged.ordered_moves(an, diagnosis, "strict", rng, params)[0]
            assert first == "pool_row_taps"
            moved = staged.apply_move(an, params, first)
            assert moved["POOL_TILE"] == pooling.ROW_TAPS and staged.valid(an, moved)
            assert staged.apply_move(an, moved, first) is None  # already there
            assert staged.ordered_moves(an, diagnosis, "strict", rng, moved)[0] != first
    assert "pool_row_taps" in staged.ordered_moves(an, "compute", "strict", rng)[1:]
    no_pool = local_analysis(problem("", "torch.relu(x)", "torch.randn(4, 8)"))
    assert "pool_row_taps" not in staged.ordered_moves(no_pool, "memory", "strict", rng)


@pytest.mark.parametrize("tile", [pooling.FLAT, pooling.ROW_TILE, pooling.ROW_TAPS])
def test_a_pool_reads_its_input_contiguous_at_strides_known_when_written(tile, tmp_path):
    """No stride is passed at launch: the input is made contiguous (itself when it already
    is) and the kernel's offsets are constants. A transposed input still pools right."""
    source = problem("self.p = nn.MaxPool2d(3, stride=2, padding=1)", "self.p(x)",
                     "torch.randn(2, 3, 19, 12).transpose(2, 3)")
    an = local_analysis(source)
    params = {**staged.default_params(an, "interpreter", "strict"), "POOL_TILE": tile,
              "BLOCK": 16}
    candidate = staged.render(source, an, params)
    kernel = _pool_kernel(candidate)
    assert "_s0" not in kernel and ".stride(" not in candidate, kernel
    assert ".contiguous()" in candidate
    expected, got, _ = run_candidate(source, candidate, tmp_path)
    torch.testing.assert_close(got.double(), expected.double(), atol=1e-5, rtol=1e-5)
