"""A GEMM whose output tiles cannot fill the card (a matrix-vector product, small matrices
over a long K) splits K by default on a GPU target, until its programs fill one wave; a
GEMM with tiles enough, or a K too short to share, keeps one program a tile."""

from __future__ import annotations

import pytest
import torch

from search_engine.hardware import get_target
from search_engine.synthesis.offline import OfflineSynthesizer
from search_engine.synthesis.offline.spaces import templates

from .conftest import run_candidate
from .test_offline_persistent_matmul import problem


def _gpu_default(source: str, target: str = "h200") -> dict:
    an = OfflineSynthesizer().analysis(source)
    assert an.family == "matmul"
    return templates.default_params(an, target, "strict")


@pytest.mark.parametrize("forward,inputs,split", [
    # 2048 x 1 outputs: 16 tiles of 128 rows, K 2^19: 8 splits fill 128 of 132 SMs
    ("a @ b", "torch.randn(2048, 524288), torch.randn(524288, 1)", 8),
    # 256 x 256 outputs: 4 tiles over K 2^19: 32 splits (the space's most)
    ("a @ b", "torch.randn(256, 524288), torch.randn(524288, 256)", 32),
    # 2 x 2 tiles a batch of 3 (12 tiles), K 4096: 8 splits of 8 K tiles (96 programs)
    ("torch.bmm(a, b)", "torch.randn(3, 256, 4096), torch.randn(3, 4096, 256)", 8),
    # plenty of tiles (32 x 32): no split
    ("a @ b", "torch.randn(4096, 4096), torch.randn(4096, 4096)", 1),
    # few tiles but a short K (2 K tiles of 64): no split
    ("a @ b", "torch.randn(256, 128), torch.randn(128, 256)", 1),
])
def test_the_default_split_fills_one_wave(forward, inputs, split):
    source = problem(forward, inputs, args="a, b")
    params = _gpu_default(source)
    assert params["SPLIT_K"] == split
    an = OfflineSynthesizer().analysis(source)
    assert templates.valid(an, params)
    assert _gpu_default(source, "interpreter")["SPLIT_K"] == 1  # CPU tests keep one


def test_the_split_follows_the_targets_sms():
    # 16 tiles: 8 splits fill 128 of an H200's 132 SMs, 16 fill 256 of an MI300X's 304, and
    # an A100's 108 take 4 (64 programs: 8 would be 128)
    source = problem("a @ b", "torch.randn(2048, 524288), torch.randn(524288, 1)", args="a, b")
    assert get_target("a100").multiprocessors == 108
    assert _gpu_default(source, "a100")["SPLIT_K"] == 4
    assert _gpu_default(source, "mi300x")["SPLIT_K"] == 16


def test_a_split_default_computes_the_product(tmp_path):
    # the GPU default's split (pointer loads: the interpreter has no TMA) run on the CPU,
    # with an epilogue after the split's workspace
    source = problem("torch.relu(a @ b + 1.0)", "torch.randn(40, 8192), torch.randn(8192, 3)",
                     args="a, b")
    params = {**_gpu_default(source), "TMA": 0}
    assert params["SPLIT_K"] > 1
    candidate = OfflineSynthesizer().render(source, params)
    assert "tl.atomic_add(ws_ptrs" in candidate and "epilogue_kernel" in candidate
    expected, got, launched = run_candidate(source, candidate, tmp_path)
    assert launched
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-3)
