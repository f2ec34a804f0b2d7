"""A child whose configuration cannot fit the target's shared memory or registers is pruned
before it costs an evaluation, and shows in the tree with the reason."""

from __future__ import annotations

import random

from search_engine.hardware import get_target
from search_engine.synthesis.base import MemoryView, NodeView, SynthesisRequest
from search_engine.synthesis.offline import OfflineSynthesizer
from search_engine.synthesis.offline.spaces import templates
from search_engine.synthesis.offline.spaces.resources import (
    PRUNED_REGISTERS, PRUNED_SHARED_MEMORY, dot_resource_problem, dot_shared_memory_bytes,
)
from .conftest import library_source

H200 = get_target("h200")
TILE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8}


def _problem(params: dict) -> str:
    return dot_resource_problem(params, 4, H200.shared_memory_per_block_bytes,
                                H200.max_registers_per_thread)


def test_estimate_matches_the_h200s_own_compile_errors():
    # benchmarks/results/default-kernels-h200-2026-12-01-matmul.json (fp32 operands)
    assert H200.shared_memory_per_block_bytes == 232448
    assert _problem({**TILE, "num_stages": 3}) == ""                  # compiled, 1.58 ms
    assert _problem({**TILE, "num_stages": 4}).startswith(PRUNED_SHARED_MEMORY)  # 262144
    assert dot_shared_memory_bytes({**TILE, "BLOCK_N": 256, "num_stages": 3}, 4) == 327680
    reason = _problem({**TILE, "BLOCK_N": 256, "num_stages": 3})
    assert reason.startswith(PRUNED_SHARED_MEMORY) and "232448" in reason


def test_an_accumulator_beyond_the_register_file_is_pruned():
    reason = _problem({**TILE, "BLOCK_N": 128, "BLOCK_K": 16, "num_warps": 2,
                       "num_stages": 1})
    assert reason.startswith(PRUNED_REGISTERS) and "256 registers" in reason
    assert _problem({**TILE, "BLOCK_K": 16, "num_warps": 4, "num_stages": 1}) == ""


def _request(source: str, parent: NodeView) -> SynthesisRequest:
    return SynthesisRequest(problem_source=source, target=H200, parent=parent,
                            memory=MemoryView("trajectory"), known_sources=set())


def test_moves_that_overflow_come_back_pruned_with_the_reason():
    syn = OfflineSynthesizer()
    source = library_source("gemm_bias_relu")
    an = syn.analysis(source)
    params = templates.default_params(an, "h200", "strict")  # 128x128x64, 3 stages: fits
    parent = NodeView(id=3, source=syn.render(source, params), status="correct",
                      origin={"synthesizer": "offline", "params": params},
                      diagnostics={"bottleneck": {"class": "compute-bound", "reason": "x"}})
    proposals = syn.propose(_request(source, parent), 4, random.Random(0))
    pruned = [p for p in proposals if p.pruned]
    live = [p for p in proposals if not p.pruned]
    assert len(live) == 4
    assert pruned, "tile and stage moves from 128x128x64 x 3 stages overflow the H200"
    for p in pruned:
        assert p.transformation.split("+")[0] in {"tile_n_up", "tile_k_up", "stages_up"}
        assert p.pruned.startswith(PRUNED_SHARED_MEMORY)
        assert dot_shared_memory_bytes(p.params, 4) > H200.shared_memory_per_block_bytes
    assert all(p.move["name"] == p.transformation for p in pruned)  # the move is recorded
    for p in live:
        assert templates.resource_problem(an, p.params, H200) == ""


def test_random_draws_never_overflow():
    syn = OfflineSynthesizer()
    source = library_source("gemm_bias_relu")
    an = syn.analysis(source)
    root = NodeView(id=0, source=source, origin={"synthesizer": "reference"},
                    status="reference")
    for seed in range(5):
        proposals = syn.propose(_request(source, root), 6, random.Random(seed))
        assert proposals and not any(p.pruned for p in proposals)
        assert all(templates.resource_problem(an, p.params, H200) == "" for p in proposals)
