"""Fixtures for the search tests: library problems, a scripted executor, the real one."""

from __future__ import annotations

import hashlib
import random
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from search_engine.evaluation.result import EvaluationResult, TimingStats

LIBRARY = Path(__file__).resolve().parents[3] / "search_engine" / "problems_library"


def problem_source(name: str) -> str:
    return (LIBRARY / f"{name}.py").read_text()


def scripted_result(source: str) -> EvaluationResult:
    """A deterministic verdict from the candidate's text: reward in [0.5, 2.5)."""
    digest = int(hashlib.sha256(source.encode()).hexdigest()[:8], 16)
    speedup = 0.5 + (digest % 2000) / 1000.0
    status = "compile_error" if digest % 7 == 0 else "correct"
    reward = 0.0 if status != "correct" else round(0.5 + 0.5 * min(speedup, 3) + 0.5, 6)
    return EvaluationResult(
        status=status, target="h200", reward=reward, coverage=1.0,
        speedup_vs_eager=speedup if status == "correct" else None,
        speedup_vs_compile=speedup / 1.2 if status == "correct" else None,
        message="scripted", diagnostics={"bottleneck": {
            "class": "memory-bound" if digest % 2 else "latency/occupancy-bound",
            "reason": "scripted diagnosis"}},
        timing={"eager": TimingStats(0.1, 0.0, 10, "scripted"),
                "compile": TimingStats(0.08, 0.0, 10, "scripted")})


class ScriptedExecutor:
    """Executor double: verdicts from `scripted_result`, after a random (unseeded) delay so
    completion order varies; `gate` (an Event) holds every evaluation until set."""

    def __init__(self, max_delay: float = 0.02, gate: threading.Event | None = None,
                 workers: int = 4):
        self.max_delay, self.gate = max_delay, gate
        self.pool = ThreadPoolExecutor(workers)
        self.requests = []
        self._lock = threading.Lock()

    def submit(self, request) -> Future:
        with self._lock:
            self.requests.append(request)
        return self.pool.submit(self._run, request)

    def _run(self, request):
        if self.gate is not None:
            self.gate.wait(30)
        time.sleep(random.random() * self.max_delay)
        return scripted_result(request.candidate_source)

    def shutdown(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


@pytest.fixture
def scripted_executor():
    executor = ScriptedExecutor()
    yield executor
    executor.shutdown()

