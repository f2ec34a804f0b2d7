"""The matmul family's persistent grid (PERSISTENT): a few programs walk every output tile,
so each takes several, with pointer or TMA loads, the fused epilogue and a rows tail after
it; it is reached by a move, refused where the grid is not one 2-D tile space (a batch, a
split K), and pruned where its live pipeline buffers and the epilogue's scratch cannot
share the target's shared memory."""

from __future__ import annotations

import pytest
import torch

from search_engine.hardware import get_target
from search_engine.synthesis.offline import OfflineSynthesizer
from search_engine.synthesis.offline.spaces import resources, templates
from search_engine.synthesis.offline.writers import matmul

from .conftest import run_candidate


def problem(forward: str, inputs: str, init: str = "", args: str = "x") -> str:
    init_lines = "".join(f"        {line}\n" for line in init.splitlines())
    return ("import torch\nimport torch.nn as nn\n\n"
            "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            f"{init_lines}    def forward(self, {args}):\n        return {forward}\n\n"
            f"def get_inputs():\n    return [{inputs}]\n\ndef get_init_inputs():\n    return []\n")


GEMM = problem("torch.relu(x @ w + 0.5)", "torch.randn(200, 96), torch.randn(96, 136)",
               args="x, w")
LINEAR = problem("torch.relu(self.fc(x) + self.bias)", "torch.randn(70, 64)",
                 "self.fc = nn.Linear(64, 96, bias=False)\n"
                 "self.bias = nn.Parameter(torch.randn(96))")
SOFTMAX_TAIL = problem("torch.softmax(x @ w, dim=1)", "torch.randn(48, 32), torch.randn(32, 80)",
                       args="x, w")
BATCHED = problem("torch.bmm(x, w)", "torch.randn(3, 40, 24), torch.randn(3, 24, 56)",
                  args="x, w")


def _render(source: str, **overlay) -> tuple:
    syn = OfflineSynthesizer()
    an = syn.analysis(source)
    params = {**templates.default_params(an, "interpreter", "strict"), **overlay}
    return an, params, syn.render(source, params)


@pytest.mark.parametrize("source", [GEMM, LINEAR, SOFTMAX_TAIL], ids=["gemm", "linear", "tail"])
@pytest.mark.parametrize("tma", [0, 1])
def test_a_persistent_grid_computes_every_tile(source, tma, tmp_path):
    an, params, candidate = _render(source, PERSISTENT=1, TMA=tma, BLOCK_M=32, BLOCK_N=32)
    assert an.family == "matmul" and templates.valid(an, params)
    assert "flatten=True" in candidate and "kh_programs" in candidate
    # GEMM's 7 x 5 tiles of 32 over the interpreter's few programs: each takes several
    assert 7 * 5 > matmul.PERSISTENT_CPU_PROGRAMS
    for seed in (1, 2):
        expected, got, launched = run_candidate(source, candidate, tmp_path, seed)
        assert launched
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)


def test_the_move_reaches_it_and_only_a_single_2d_tile_space_takes_it():
    an, params, _ = _render(GEMM)
    assert params["PERSISTENT"] == 0
    child = templates.MOVES["matmul"]["to_persistent"](params)
    assert child["PERSISTENT"] == 1 and templates.valid(an, child)
    assert not templates.valid(an, {**child, "SPLIT_K": 2})
    batched = OfflineSynthesizer().analysis(BATCHED)  # the persistent grid has no batch axis
    batched_params = templates.default_params(batched, "interpreter", "strict")
    assert templates.valid(batched, batched_params)
    assert not templates.valid(batched, {**batched_params, "PERSISTENT": 1})
    assert "to_persistent" in templates.MOVE_REASONS


def test_its_epilogue_scratch_counts_against_shared_memory():
    h200 = get_target("h200")
    tile = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 32, "num_stages": 3, "num_warps": 8}
    assert resources.dot_resource_problem(tile, 4, h200.shared_memory_per_block_bytes) == ""
    persistent = {**tile, "PERSISTENT": 1}  # 147456 bytes of stages + the 131072 accumulator
    assert resources.dot_shared_memory_bytes(persistent, 4) == 147456 + 131072
    assert resources.dot_resource_problem(persistent, 4, h200.shared_memory_per_block_bytes) \
        .startswith(resources.PRUNED_SHARED_MEMORY)
    narrower = {**persistent, "BLOCK_N": 128, "num_stages": 4}
    assert resources.dot_resource_problem(narrower, 4, h200.shared_memory_per_block_bytes) == ""
