"""The default-kernel bench's experiments stay the same kernels: the 32-bit index, unrolled-loop
and evict-last variants of a default compute what the reference computes (interpreter),
change only what they name, and `--only`/`--labels` pick the problems and kernels timed."""

from __future__ import annotations

import pytest
import torch

from search_engine.synthesis.offline import OfflineSynthesizer
from search_engine.synthesis.offline import default_kernels_bench as bench
from search_engine.synthesis.offline.synthesizer import family_module
from .conftest import run_candidate

CASES = {
    # a window past the template's own unrolling (pooling.UNROLL_TAPS), so the rewrite
    # has a rolled loop to unroll
    "max_pool": bench._problem("self.pool(x)", "torch.randn(2, 3, 20, 20)",
                               "self.pool = nn.MaxPool2d(6, stride=2, padding=1)"),
    "conv": bench._problem("self.conv(x)", "torch.randn(2, 16, 10, 10)",
                           "self.conv = nn.Conv2d(16, 16, 3)"),
    "matmul": bench._problem("torch.matmul(a, b)", "torch.randn(32, 48), torch.randn(48, 40)",
                             args="a, b"),
    "cross_entropy": bench._problem("torch.nn.functional.cross_entropy(x, t)",
                                    "torch.randn(8, 37), torch.randint(0, 37, (8,))",
                                    args="x, t"),
}


def _default_source(source: str) -> str:
    syn = OfflineSynthesizer()
    an = syn.analysis(source)
    return syn.render(source, family_module(an).default_params(an, "h200", "strict"))


# each rewrite on the kernels it changes (a rewrite that leaves a kernel as it was proves
# nothing here: the pick needs no constant-trip loop, only the pool has window loads)
@pytest.mark.parametrize("name, variant", [
    ("max_pool", "index32"), ("conv", "index32"), ("cross_entropy", "index32"),
    ("max_pool", "unrolled"), ("conv", "unrolled"), ("max_pool", "evict_last"),
    ("matmul", "warp_specialized")])
def test_an_experiment_is_the_same_kernel(name, variant, tmp_path):
    source = CASES[name]
    default = _default_source(source)
    kernel = getattr(bench, variant)(default)
    assert kernel != default
    expected, got, launched = run_candidate(source, kernel, tmp_path)
    assert launched
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)


def test_the_experiments_change_only_what_they_name():
    source = _default_source(CASES["max_pool"])
    assert "tl.int64" in source and "tl.int64" not in bench.index32(source)
    assert bench.index32(source).count("tl.int32") >= source.count("tl.int64")
    assert "for w in range(36):" in source
    unrolled = bench.unrolled(source)
    assert "for w in tl.static_range(36):" in unrolled
    assert unrolled.replace("tl.static_range(36)", "range(36)") == source
    wide = "    for w in range(%d):\n" % (bench.UNROLL_MAX_TRIPS + 1)
    assert bench.unrolled(wide) == wide  # a long loop stays rolled
    assert bench.unrolled("    for k in range(0, K, BLOCK_K):\n") == \
        "    for k in range(0, K, BLOCK_K):\n"
    hinted = bench.evict_last(source)
    assert hinted.count("eviction_policy='evict_last'") == source.count("mask=vmask") == 1
    gemm = _default_source(CASES["matmul"])
    specialized = bench.warp_specialized(gemm)
    assert specialized.count("warp_specialize=True") == 1  # the K loop, nothing else
    assert specialized.replace("tl.range(", "range(").replace(", warp_specialize=True", "") \
        == gemm


def test_only_and_labels_pick_problems_and_kernels():
    data = {"a": {"kernels": {"default": 1, "default_i32": 2, "wide": 3}},
            "b": {"kernels": {"default": 4}}, "c": {"kernels": {"default": 5}}}
    assert bench.select(data, "c,a,missing", "default,default_i32") == ["c", "a"]
    assert data["a"]["kernels"] == {"default": 1, "default_i32": 2}
    assert data["b"]["kernels"] == {"default": 4}  # not asked for: untouched
    assert bench.select(data, "", "") == ["a", "b", "c"]


def test_an_earlier_render_is_timed_beside_under_its_prefix():
    """`--beside before=OLD.json`: an earlier commit's kernels join this render's as
    `before_<label>`, so `--labels default,before_default` times both in one process."""
    new = {"max_pool3d": {"kernels": {"default": {"source": "new"}, "tile": {"source": "t"}}},
           "softmax": {"kernels": {"default": {"source": "s"}}}}
    old = {"max_pool3d": {"kernels": {"default": {"source": "old"}}},
           "gone": {"kernels": {"default": {"source": "x"}}}}
    bench.merge_beside(new, old, "before")
    assert "gone" not in new  # only problems this render has
    assert bench.select(new, "max_pool3d", "default,before_default") == ["max_pool3d"]
    assert new["max_pool3d"]["kernels"] == {"default": {"source": "new"},
                                            "before_default": {"source": "old"}}


def test_render_keeps_a_neighbour_only_where_its_kernel_differs(tmp_path, monkeypatch):
    """A neighbour whose parameter the problem's writers ignore (a pool layout on a conv)
    renders the default's kernel again: it is not kept, so no device time re-times it."""
    monkeypatch.setattr(bench, "PROBLEMS", {"conv": (CASES["conv"], 1, "flops")})
    monkeypatch.setattr(bench, "NEIGHBOURS", {"conv": {"ignored": {"POOL_TILE": 1},
                                                       "wider": {"BLOCK_M": 128}}})
    data = bench.render(tmp_path / "kernels.json")
    kernels = data["conv"]["kernels"]
    assert "wider" in kernels and "ignored" not in kernels
    assert kernels["wider"]["source"] != kernels["default"]["source"]
