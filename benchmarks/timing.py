"""Timing for the suite runner: one method for eager, torch.compile and our kernels, and the
machine's measured ceilings (copy bandwidth, matmul FLOP/s) that the floor times use.

On a GPU every number is `triton.testing.do_bench`'s median (it zeroes a 256 MB buffer
before each repetition, so L2 starts cold). Without one, wall-clock medians of a few calls
stand in: they exercise the code path and are labelled `wall_clock`, never comparable.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

GPU_METHOD = "triton.testing.do_bench(median, warmup=25 ms, rep=100 ms, L2 flushed)"
CPU_METHOD = "wall_clock(median of 5 after 1 warm-up)"


def time_ms(fn: Callable[[], object], device: str) -> float:
    """Median milliseconds of one call of `fn`."""
    if device == "cuda":
        import triton.testing

        return float(triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median"))
    fn()
    samples = []
    for _ in range(5):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1e3)
    return statistics.median(samples)


def timing_method(device: str) -> str:
    return GPU_METHOD if device == "cuda" else CPU_METHOD


def synchronize(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


# Sizes of the ceiling probes: 1 GiB copies and 8192^3 matmuls on a GPU; small on a CPU.
COPY_ELEMENTS = {"cuda": 1 << 28, "cpu": 1 << 20}
MATMUL_SIZE = {"cuda": 8192, "cpu": 128}
MATMUL_DTYPES = ("float32", "tf32", "bfloat16", "float16")


def measure_ceilings(device: str) -> dict:
    """Copy bandwidth (GB/s, read + write counted) and dense matmul TFLOP/s per precision,
    measured now on this machine with the same timing method as the problems."""
    import torch

    elements = COPY_ELEMENTS[device]
    src = torch.randn(elements, device=device)
    dst = torch.empty_like(src)
    copy_ms = time_ms(lambda: dst.copy_(src), device)
    del src, dst
    tflops = {name: _matmul_tflops(name, device) for name in MATMUL_DTYPES}
    return {"copy_gbs": _significant(2 * elements * 4 / (copy_ms * 1e-3) / 1e9),
            "matmul_tflops": tflops, "copy_bytes": 2 * elements * 4,
            "matmul_size": MATMUL_SIZE[device], "method": timing_method(device)}


def _matmul_tflops(name: str, device: str) -> float:
    import torch

    n = MATMUL_SIZE[device]
    dtype = torch.float32 if name == "tf32" else getattr(torch, name)
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
    try:
        ms = time_ms(lambda: a @ b, device)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous
    return _significant(2 * n ** 3 / (ms * 1e-3) / 1e12)


def _significant(value: float, digits: int = 4) -> float:
    return float(f"{value:.{digits}g}")
