"""The matmul family's TMA store (TMA_STORE): the output tile written through a descriptor
of the output (the copy engine writes whole lines from shared memory), with the fused
epilogue, a persistent grid and a rows tail; refused where the output rows are not 16-byte
aligned or K is split (partials go to an atomic workspace), and counted against shared
memory as a whole fp32 tile."""

from __future__ import annotations

import pytest
import torch

from search_engine.evaluation.integrity.static_checks import run_static_checks
from search_engine.synthesis.offline import OfflineSynthesizer
from search_engine.synthesis.offline.spaces import resources, templates

from .conftest import run_candidate
from .test_offline_persistent_matmul import GEMM, LINEAR, SOFTMAX_TAIL, _render, problem

TALL_SKINNY = problem("torch.matmul(a, b)", "torch.randn(72, 8), torch.randn(8, 100)",
                      args="a, b")
ODD_COLUMNS = problem("torch.matmul(a, b)", "torch.randn(40, 16), torch.randn(16, 37)",
                      args="a, b")


@pytest.mark.parametrize("source", [GEMM, LINEAR, SOFTMAX_TAIL, TALL_SKINNY],
                         ids=["gemm", "linear", "tail", "tall_skinny"])
@pytest.mark.parametrize("persistent", [0, 1])
def test_the_tile_stored_through_a_descriptor_is_the_product(source, persistent, tmp_path):
    an, params, candidate = _render(source, TMA=1, TMA_STORE=1, PERSISTENT=persistent,
                                    BLOCK_M=32, BLOCK_N=32)
    assert templates.valid(an, params)
    gpu_params = {**templates.default_params(an, "h200", "strict"), "TMA_STORE": 1,
                  "PERSISTENT": persistent}
    gpu = OfflineSynthesizer().render(source, gpu_params)
    assert "out_ptr.store([pid_m * BLOCK_M, pid_n * BLOCK_N]" in gpu
    refused = [f"{f.check}: {f.evidence}" for f in run_static_checks(gpu, torch.float32, "strict")
               if f.severity != "warning"]
    assert not refused
    assert "kh_yd = TensorDescriptor.from_tensor(kh_y.view(kh_m, kh_n)" in candidate
    assert "out_ptr.store([pid_m * BLOCK_M, pid_n * BLOCK_N]" in candidate
    for seed in (1, 2):
        expected, got, launched = run_candidate(source, candidate, tmp_path, seed)
        assert launched
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)


def test_a_move_reaches_it_where_the_output_rows_are_aligned():
    an, params, _ = _render(TALL_SKINNY, TMA=1)
    assert params["TMA_STORE"] == 0
    child = templates.MOVES["matmul"]["tma_store"](params)
    assert child["TMA_STORE"] == 1 and templates.valid(an, child)
    assert not templates.valid(an, {**child, "TMA": 0})  # a pointer-loading kernel
    assert not templates.valid(an, {**child, "SPLIT_K": 2})  # partials to a workspace
    odd = OfflineSynthesizer().analysis(ODD_COLUMNS)  # 37 fp32 columns: rows of 148 bytes
    odd_params = {**templates.default_params(odd, "interpreter", "strict"), "TMA_STORE": 1}
    assert not templates.valid(odd, odd_params)
    assert "tma_store" in templates.MOVE_REASONS


def test_its_staged_tile_counts_against_shared_memory():
    tile = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_stages": 3}
    staged = resources.dot_shared_memory_bytes({**tile, "TMA_STORE": 1}, 4)
    assert staged == resources.dot_shared_memory_bytes(tile, 4) + 128 * 128 * 3
