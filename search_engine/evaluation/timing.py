"""How KernelHub times a forward pass (candidate, eager and torch.compile alike).

GPU method ("cuda_events+l2_flush+device_sync"):
1. warm-up for `warmup_ms` (compilation, autotuning and caches stay out of the numbers);
2. repetitions: enough for at least `min_timing_ms` of measured time (≥ `min_reps`);
3. before every repetition, write a buffer larger than L2 (`l2_flush_factor` × L2) so
   no repetition reads the previous one's data from cache;
4. each repetition is bracketed by CUDA events on the current stream, with a
   device-wide `torch.cuda.synchronize()` before the end event: work hidden on another
   stream still lands inside the interval;
   The GPU spins (`torch.cuda._sleep`) a little longer than the host needs to enqueue
   the call, so host launch latency stays out, as in do_bench's full queue (not when
   the candidate launched on another stream: that stream would not wait); the same
   interval around no work (`floor_ms`, the sync's own latency) is subtracted;
5. inputs rotate between several sets (the correctness trials' inputs), so a candidate
   that caches results by shape or pointer is caught: the outputs of the last rotation
   are returned and compared with the reference by the trusted parent;
6. the first sample is discarded; the median and IQR are reported;
7. a host wall-clock measurement of each repetition cross-checks the events.

Interpreter method ("interpreter"): wall-clock of a few calls on the CPU; never compared
with GPU numbers and never used for a speedup.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

# Bound when this module is imported: in the sandbox that is before the candidate's code,
# so a candidate that patches the timers at runtime cannot change what we call here.
_perf_counter = time.perf_counter
_synchronize = torch.cuda.synchronize
_Event = torch.cuda.Event
_record = torch.cuda.Event.record
_event_synchronize = torch.cuda.Event.synchronize
_elapsed_time = torch.cuda.Event.elapsed_time
_sleep = torch.cuda._sleep

GPU_METHOD = "cuda_events+l2_flush+device_sync"
INTERPRETER_METHOD = "interpreter"


@dataclass
class Measurement:
    median_ms: float | None
    iqr_ms: float | None
    samples: int
    method: str
    host_median_ms: float | None = None
    floor_ms: float | None = None  # median interval of an empty call: the method's own cost
    raw_median_ms: float | None = None  # before subtracting floor_ms
    pad_ms: float | None = None  # GPU spin before each sample (hides host enqueue latency)
    measured_s: float = 0.0  # wall time spent in the measurement loop itself
    last_outputs: list[tuple[int, Any]] = field(default_factory=list)  # (input set, output)

    def stats(self) -> dict:
        return {"median_ms": self.median_ms, "iqr_ms": self.iqr_ms, "samples": self.samples,
                "method": self.method}


def median_iqr(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    if len(ordered) < 4:
        return statistics.median(ordered), (ordered[-1] - ordered[0]) if ordered else 0.0
    q = statistics.quantiles(ordered, n=4, method="inclusive")
    return q[1], q[2] - q[0]


def time_gpu(
    fn: Callable[[Sequence[Any]], Any],
    input_sets: Sequence[Sequence[Any]],
    l2_bytes: int,
    warmup_ms: float = 25.0,
    min_timing_ms: float = 100.0,
    min_reps: int = 10,
    max_reps: int = 5000,
    l2_flush_factor: float = 2.0,
    keep_outputs: bool = True,
    pad: bool = True,
) -> Measurement:
    """`pad=False` for candidates seen launching on other streams: those streams would not
    wait for the padded start event, so their work could slip out of the interval."""
    flush = torch.empty(max(int(l2_bytes * l2_flush_factor) // 4, 1 << 20), dtype=torch.int32,
                        device="cuda")
    n_sets = len(input_sets)

    # warm-up; also measures the host's enqueue time and one call's cost
    _synchronize()
    t0 = _perf_counter()
    calls, enqueue_ms = 0, 0.0
    while calls < 2 or (_perf_counter() - t0) * 1e3 < warmup_ms:
        e0 = _perf_counter()
        fn(input_sets[calls % n_sets])
        enqueue_ms = max(enqueue_ms, (_perf_counter() - e0) * 1e3) if calls else 0.0
        _synchronize()
        calls += 1
    per_call_ms = (_perf_counter() - t0) * 1e3 / calls
    reps = int(min(max_reps, max(min_reps, math.ceil(min_timing_ms / max(per_call_ms, 1e-3)))))
    reps = max(reps, n_sets) + 1  # the first sample is discarded

    # The GPU spins for longer than the host needs to enqueue the call, so the interval
    # holds device work, not Python launch latency (as with do_bench's full queue).
    pad_ms = min(max(1.5 * enqueue_ms + 0.02, 0.05), 20.0) if pad else 0.0
    pad_cycles = int(pad_ms * _sleep_cycles_per_ms()) if pad else 0
    floor_ms = _empty_interval_ms(flush, pad_cycles)
    starts = [_Event(enable_timing=True) for _ in range(reps)]
    ends = [_Event(enable_timing=True) for _ in range(reps)]
    host_ms = []
    last: dict[int, Any] = {}
    loop_start = _perf_counter()
    for i in range(reps):
        out = None  # the last call's outputs go first: one set alive, not two (GB-sized ones)
        flush.zero_()
        _synchronize()
        which = i % n_sets
        if pad_cycles:
            _sleep(pad_cycles)
        h0 = _perf_counter()
        _record(starts[i])
        out = fn(input_sets[which])
        _synchronize()  # device-wide: every stream's work is inside the interval
        _record(ends[i])
        _event_synchronize(ends[i])
        host_ms.append((_perf_counter() - h0) * 1e3)
        if keep_outputs and i >= reps - n_sets:
            last[which] = _snapshot(out)
    measured_s = _perf_counter() - loop_start
    raw = [_elapsed_time(s, e) for s, e in zip(starts, ends)][1:]
    samples = [max(r - floor_ms, 0.0) for r in raw]
    median, iqr = median_iqr(samples)
    return Measurement(
        median_ms=median, iqr_ms=iqr, samples=len(samples), method=GPU_METHOD,
        host_median_ms=max(statistics.median(host_ms[1:]) - pad_ms, 0.0), measured_s=measured_s,
        floor_ms=floor_ms, raw_median_ms=statistics.median(raw), pad_ms=pad_ms,
        last_outputs=sorted(last.items(), key=lambda kv: kv[0]),
    )


def _snapshot(out: Any) -> Any:
    """A copy of what one call returned, taken at once: a candidate that reuses its output
    buffer (legitimately) or rewrites it later cannot change what this call answered."""
    if isinstance(out, torch.Tensor) and type(out) is torch.Tensor:
        return out.detach().clone()
    if isinstance(out, (list, tuple)):
        return type(out)(_snapshot(o) for o in out)
    return out


def _sleep_cycles_per_ms() -> float:
    start, end = _Event(enable_timing=True), _Event(enable_timing=True)
    cycles = 2_000_000
    _sleep(cycles // 10)  # wake the clocks up
    _record(start)
    _sleep(cycles)
    _record(end)
    _event_synchronize(end)
    return cycles / max(_elapsed_time(start, end), 1e-3)


def _empty_interval_ms(flush, pad_cycles: int, reps: int = 50) -> float:
    """The method's own cost, subtracted from every sample: the same padded, event-bracketed,
    device-synchronized interval around no work at all."""
    samples = []
    for _ in range(reps):
        flush.zero_()
        _synchronize()
        if pad_cycles:
            _sleep(pad_cycles)
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        _record(start)
        _synchronize()
        _record(end)
        _event_synchronize(end)
        samples.append(_elapsed_time(start, end))
    return statistics.median(samples[1:])


def time_interpreter(fn: Callable[[Sequence[Any]], Any], input_sets: Sequence[Sequence[Any]],
                     reps: int = 3, keep_outputs: bool = True) -> Measurement:
    samples = []
    last: dict[int, Any] = {}
    loop_start = _perf_counter()
    n_sets = len(input_sets)
    total = max(reps, n_sets if keep_outputs else reps)
    for i in range(total):
        which = i % n_sets
        t0 = _perf_counter()
        out = fn(input_sets[which])
        samples.append((_perf_counter() - t0) * 1e3)
        if keep_outputs:
            last[which] = _snapshot(out)
    median, iqr = median_iqr(samples)
    return Measurement(
        median_ms=median, iqr_ms=iqr, samples=len(samples), method=INTERPRETER_METHOD,
        host_median_ms=median, measured_s=_perf_counter() - loop_start,
        last_outputs=sorted(last.items(), key=lambda kv: kv[0]),
    )
