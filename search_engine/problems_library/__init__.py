"""Example KernelBench-format problems for tests, benchmarks and demos.

Each problem file keeps small module-level sizes (fast on the CPU interpreter);
`library_problem(name, scale="gpu")` returns the same problem at realistic GPU sizes.
`KERNELHUB_PROBLEM_SCALE=gpu` makes `gpu` the default scale. Clean Triton solutions
(`ModelNew`) live in `solutions/` under the same file names.
"""

from __future__ import annotations

import os
from pathlib import Path

from search_engine.problems import Problem

LIBRARY_DIR = Path(__file__).parent
SOLUTIONS_DIR = LIBRARY_DIR / "solutions"

GPU_SIZES: dict[str, dict[str, int]] = {
    "softmax": {"batch_size": 4096, "dim": 8192},
    "layernorm": {"batch_size": 8192, "hidden": 4096},
    "gemm_bias_relu": {"M": 4096, "K": 4096, "N": 4096},
}


def library_names() -> list[str]:
    return sorted(GPU_SIZES)


def library_problem(name: str, scale: str | None = None) -> Problem:
    if name not in GPU_SIZES:
        raise ValueError(f"unknown library problem {name!r}; known: {', '.join(library_names())}")
    scale = scale or os.environ.get("KERNELHUB_PROBLEM_SCALE", "small")
    if scale not in ("small", "gpu"):
        raise ValueError(f"scale must be 'small' or 'gpu', not {scale!r}")
    problem = Problem.from_file(LIBRARY_DIR / f"{name}.py")
    return problem.with_sizes(**GPU_SIZES[name]) if scale == "gpu" else problem


def library_solution(name: str) -> str:
    """Source of the clean Triton `ModelNew` for a library problem."""
    return (SOLUTIONS_DIR / f"{name}.py").read_text()
