"""Will a tiled-dot configuration fit the target? Decided before it costs an evaluation.

Shared memory: Triton pipelines a K loop of `tl.dot` with `num_stages` buffers of the A and
B tiles (cp.async and TMA alike), plus scratch for the epilogue's layout conversion. The
estimate is calibrated on the H200's own compile errors (benchmarks/results/
default-kernels-h200-2026-12-01-matmul.json, fp32 operands): 128x128x64 with 3 stages
compiles; with 4 stages Triton asks 262144 bytes (4 x 64 KiB of tiles); 128x256x64 with 3
stages asks 327680 (3 x 96 KiB of tiles + 32 KiB, a quarter of the fp32 accumulator). The
limit per block is the target's (`hardware.py`; H200: 232448 bytes).

Registers: the fp32 accumulator alone takes BLOCK_M x BLOCK_N / (32 x num_warps) registers
per thread; above the target's per-thread maximum it cannot be held at all (every MMA
would spill).
"""

from __future__ import annotations

from typing import Any

PRUNED_SHARED_MEMORY = "pruned.shared_memory"
PRUNED_REGISTERS = "pruned.registers"


def dot_shared_memory_bytes(params: dict[str, Any], element_bytes: int) -> int:
    stages = max(1, int(params.get("num_stages", 1)))
    tiles = params["BLOCK_M"] * params["BLOCK_K"] + params["BLOCK_K"] * params["BLOCK_N"]
    epilogue = params["BLOCK_M"] * params["BLOCK_N"]  # a quarter of the fp32 accumulator
    if params.get("PERSISTENT") or params.get("TMA_STORE"):
        # the pipeline's buffers stay live from one tile to the next, so the epilogue's
        # layout conversion gets its own scratch, up to the whole fp32 accumulator (sm_90
        # compiles: 128x256x32 tf32 in 3 stages asks 147456 bytes one tile a program and
        # 278528 persistent; 64x256x32, 122880 and 188416); a TMA store stages the whole
        # output tile for the copy engine
        epilogue = params["BLOCK_M"] * params["BLOCK_N"] * 4
    return stages * tiles * element_bytes + epilogue


def accumulator_registers(params: dict[str, Any]) -> int:
    threads = 32 * max(1, int(params.get("num_warps", 4)))
    return -(-params["BLOCK_M"] * params["BLOCK_N"] // threads)


def dot_resource_problem(params: dict[str, Any], element_bytes: int, shared_limit: int,
                         register_limit: int = 0) -> str:
    """Why this configuration cannot run on the target ('' when it fits)."""
    if not all(k in params for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K")):
        return ""
    shared = dot_shared_memory_bytes(params, element_bytes)
    if shared_limit > 0 and shared > shared_limit:
        return (f"{PRUNED_SHARED_MEMORY}: about {shared} bytes of shared memory "
                f"({params.get('num_stages', 1)} stages of {params['BLOCK_M']}x"
                f"{params['BLOCK_K']} + {params['BLOCK_K']}x{params['BLOCK_N']} tiles of "
                f"{element_bytes} bytes, plus epilogue scratch); the target allows "
                f"{shared_limit} per block")
    registers = accumulator_registers(params)
    if register_limit > 0 and registers > register_limit:
        return (f"{PRUNED_REGISTERS}: the {params['BLOCK_M']}x{params['BLOCK_N']} fp32 "
                f"accumulator alone needs {registers} registers per thread over "
                f"{params.get('num_warps', 4)} warps; the target allows {register_limit}")
    return ""
