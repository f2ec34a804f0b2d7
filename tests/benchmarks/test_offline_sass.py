"""`python -m benchmarks.offline_sass`: a rendered kernel compiled for sm_90 on the CPU and its
SASS counted (Triton's own ptxas and cuobjdump, no GPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import offline_sass
from search_engine.synthesis.offline.spaces import staged
from search_engine.synthesis.offline.writers import pooling
from tests.search_engine.synthesis.test_offline_staged import local_analysis, problem


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """An AvgPool1d 8/1/4 over long rows in the row tile and in row taps."""
    source = problem("self.p = nn.AvgPool1d(8, stride=1, padding=4)", "self.p(x)",
                     "torch.randn(2, 4, 8192)")
    an = local_analysis(source)
    # four warps in both layouts (the 1-D default takes 8): four outputs a thread
    base = {**staged.default_params(an, "h200", "strict"), "num_warps": 4}
    data = {"avg_pool1d": {"kernels": {
        label: {"source": staged.render(source, an, {**base, "POOL_TILE": tile})}
        for label, tile in (("tile", pooling.ROW_TILE), ("row_taps", pooling.ROW_TAPS))}}}
    path = tmp_path_factory.mktemp("sass") / "kernels.json"
    path.write_text(json.dumps(data))
    return path


def _run(argv) -> list[dict]:
    """The tool as a user runs it: its own process, kernels compiled, not interpreted."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-m", "benchmarks.offline_sass", *argv], env={
        **env, "TRITON_DEFAULT_FP_FUSION": "1"}, capture_output=True, text=True, timeout=300,
        check=True, cwd=Path(__file__).resolve().parents[2])
    return [json.loads(line) for line in done.stdout.splitlines()]


def _rows(argv) -> dict:
    return {(r["label"], r["inside_only"]): r for r in _run(argv)}


def test_inside_row_blocks_merge_their_taps_into_few_wide_loads(kernels):
    rows = _rows(["--kernels", str(kernels), "--only", "avg_pool1d", "--labels", "tile,row_taps"])
    rows.update(_rows(["--kernels", str(kernels), "--only", "avg_pool1d", "--labels", "row_taps",
                       "--inside"]))
    tile, taps, inside = rows["tile", False], rows["row_taps", False], rows["row_taps", True]
    for row in (tile, taps, inside):
        assert row["registers"] > 0 and row["spill_bytes"] == 0 and row["instructions"] > 20
        assert row["block"] == 512 and row["num_warps"] == 4  # four outputs a thread
    # masked: a load per output and tap (32 a thread); inside: the windows of a thread's four
    # outputs (11 neighbouring elements) in a few vector loads, with far fewer instructions
    assert tile["global_loads"] == 32
    assert inside["global_loads"] <= 6 < taps["global_loads"]
    assert inside["per_output"] < 0.75 * tile["per_output"]


def test_only_inside_keeps_the_inside_walk_and_drops_the_edge_walk():
    source = ("def k():\n    acc = 0\n    if (a >= 0) & (b < 9):\n"
              "        tmask = tl.full([BLOCK], 1, tl.int1)\n        acc += 1\n"
              "    else:\n        acc += 2\n        acc += 3\n    tl.store(p, acc)\n")
    assert offline_sass.only_inside(source) == (
        "def k():\n    acc = 0\n    if True:\n        tmask = tl.full([BLOCK], 1, tl.int1)\n"
        "        acc += 1\n    tl.store(p, acc)\n")


def test_launch_arguments_type_the_kernel_as_the_launch_would():
    """Literal integers by value (1 a constant, 32 or 64 bits by size), strides and
    pointers by name: the committed renders compile, a reduction's two passes each a row."""
    rows = _run(["--only", "frobenius,softmax", "--labels", "default"])
    assert [(r["problem"], r["kernel"]) for r in rows] == [
        ("frobenius", "fused_rows_kernel_pass0"), ("frobenius", "fused_rows_kernel"),
        ("softmax", "fused_rows_kernel")]
    assert all(r["registers"] > 0 and r["instructions"] > 50 for r in rows)
    assert offline_sass._arguments("a, f(b, c), [d, e], K=4") == ["a", "f(b, c)", "[d, e]", "K=4"]
