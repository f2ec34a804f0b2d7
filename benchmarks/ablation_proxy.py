"""The skills ablation's ranking proxy for the CPU interpreter, where timings mean nothing.

`proxy_time_us` models an offline template candidate's time from the parameters in its header
on a small GPU (4 SMs with an H200's per-SM bandwidth and FLOP/s); `proxy_eager_us` is the
same model for a fixed, vendor-like configuration. `ProxyExecutor` evaluates each distinct
candidate once, keeps the real verdict and, on the interpreter, puts the modelled speedup in
place of the measured one. Needs only search_engine (imported lazily) and the standard library.
"""

from __future__ import annotations

import ast
import hashlib
import math
import threading
from concurrent.futures import Future, InvalidStateError
from dataclasses import replace

# A small GPU (4 SMs with an H200's per-SM bandwidth and FLOP/s, a short launch), so the
# interpreter's tiny problems show the trade-offs GPU-sized problems show on an H200.
SMS, BANDWIDTH, FP32_PEAK, LAUNCH_US = 4, 0.15e12, 2e12, 0.3


def template_params(source: str) -> dict | None:
    """The offline template's parameters, from the header it writes into every candidate."""
    marker = "Template parameters: "
    start = source.find(marker)
    if start < 0:
        return None
    text = source[start + len(marker): source.find("\n", start)].rstrip(".")
    try:
        return dict(ast.literal_eval(text))
    except (ValueError, SyntaxError):
        return None


def _memory_time_us(bytes_moved: float, per_thread: float, warps_total: float) -> float:
    vector = min(1.0, per_thread / 4.0)  # 128-bit loads need 4 fp32 per thread
    spill = max(1.0, per_thread / 64.0)  # more than 64 live values spill registers
    parallel = min(1.0, warps_total / (SMS * 16.0))  # 16 warps per SM hide latency
    return bytes_moved / (BANDWIDTH * math.sqrt(vector) * parallel ** 0.7) * 1e6 * spill


def proxy_time_us(an, params: dict) -> tuple[float, str]:
    """(modelled time, bottleneck class) of a template candidate on an H200-like device."""
    from search_engine.synthesis.offline.spaces import templates

    if an.family == "matmul":
        m, n, k = templates.matmul_dims(an)
        bm, bn, _ = params["BLOCK_M"], params["BLOCK_N"], params["BLOCK_K"]  # K tile: unmodelled
        split = params.get("SPLIT_K", 1)
        tiles = math.ceil(m / bm) * math.ceil(n / bn) * split
        intensity = min(1.0, (bm * bn / (bm + bn)) / 48.0)
        stages = min(1.0, 0.55 + 0.15 * (params.get("num_stages", 1) - 1))
        warps_fit = min(1.0, params["num_warps"] * 32 * 16 / (bm * bn)) ** 0.3
        parallel = min(1.0, tiles / SMS)
        waste = (math.ceil(m / bm) * bm * math.ceil(n / bn) * bn) / (m * n)
        compute = 2 * m * n * k * waste / (FP32_PEAK * intensity * stages * warps_fit
                                           * parallel) * 1e6
        memory = 4 * (m * k + k * n + (split + 1) * m * n) / BANDWIDTH * 1e6
        t = LAUNCH_US * (2 if split > 1 else 1) + max(compute, memory) + 0.3 * min(compute, memory)
        return t, ("compute-bound" if compute > memory else "memory-bound")
    out = math.prod(an.nodes[an.output].shape)
    if an.family == "rows":
        length = templates.row_length(an)
        rows = max(1, math.prod(an.row_shape) // length)
        per_program = params["ROWS"] * params["BLOCK_R"]
        programs = math.ceil(rows / params["ROWS"])
        passes = {"single": 1.0}.get(params.get("variant"), 2.0)
        waste = params["BLOCK_R"] / length if params.get("variant") == "single" else 1.0
        bytes_moved = 4 * rows * length * (passes + 1) * waste
    else:
        per_program, programs = params["BLOCK"], math.ceil(out / params["BLOCK"])
        bytes_moved = 4 * out * (an.input_count + 1)
    threads = 32 * params["num_warps"]
    t = LAUNCH_US + _memory_time_us(bytes_moved, per_program / threads,
                                    programs * params["num_warps"]) + programs * 0.01 / SMS
    return t, ("memory-bound" if t > 2 * LAUNCH_US else "latency-bound")


def proxy_eager_us(an) -> float:
    """The baseline: the same model for one fixed, vendor-like configuration (one row per
    program with 4 warps, 1024-element blocks, 64x64x32 GEMM tiles in 3 stages)."""
    from search_engine.synthesis.offline.writers import codegen
    from search_engine.synthesis.offline.spaces import templates

    if an.family == "matmul":
        vendor = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4,
                  "num_stages": 3, "SPLIT_K": 1}
    elif an.family == "rows":
        vendor = {"variant": "single", "ROWS": 1, "num_warps": 4,
                  "BLOCK_R": codegen.next_pow2(templates.row_length(an))}
    else:
        vendor = {"BLOCK": 1024, "num_warps": 4}
    return proxy_time_us(an, vendor)[0]


class ProxyExecutor:
    """Identical candidates (common across arms and seeds) are evaluated once, so both arms
    see the same measurement of the same kernel. With `proxy` (the interpreter) correctness
    comes from the real executor and values from the proxy."""

    def __init__(self, inner, synthesizer, proxy: bool = True):
        from search_engine.evaluation.config import RewardConfig

        self.inner, self.synthesizer, self.reward = inner, synthesizer, RewardConfig()
        self.proxy = proxy
        self._cache: dict[str, Future] = {}
        self._lock = threading.Lock()
        self.evaluated = 0

    def submit(self, request) -> Future:
        key = hashlib.sha256((request.problem_source + "\0" + request.candidate_source)
                             .encode()).hexdigest()
        with self._lock:
            base = self._cache.get(key)
            if base is None:
                base = self._cache[key] = self.inner.submit(request)
                self.evaluated += 1
        out: Future = Future()

        def done(f: Future) -> None:
            if out.done():  # the search cancelled it (its time limit): nobody waits on it
                return
            try:
                result = self._proxied(request, f.result())
            except Exception as exc:  # the proxy failed: report, do not hang the search
                result = exc
            try:
                (out.set_exception if isinstance(result, Exception) else out.set_result)(result)
            except InvalidStateError:  # cancelled between the check and now
                pass

        base.add_done_callback(done)
        return out

    def _proxied(self, request, result):
        from search_engine.evaluation.reward import compute_reward

        params = template_params(request.candidate_source)
        if not self.proxy or result.status != "correct" or params is None:
            return result
        an = self.synthesizer.analysis(request.problem_source)
        t, klass = proxy_time_us(an, params)
        speedup = round(proxy_eager_us(an) / t, 4)
        diagnostics = {**result.diagnostics, "bottleneck": {"class": klass, "reason": "proxy"}}
        return replace(result, speedup_vs_eager=speedup, diagnostics=diagnostics,
                       speedup_label="proxy: modelled H200 time of the template parameters",
                       reward=compute_reward("correct", speedup, result.coverage, self.reward))

    def shutdown(self) -> None:
        self.inner.shutdown()
