"""Hard limits: a search out of time (or stopped by a signal) kills the evaluations in
flight, keeps the best so far and says why it stopped, through the real evaluator (the
Triton interpreter, real sandboxes) and the real `optimize` command."""

from __future__ import annotations

import json
import signal
import threading
import time
from concurrent.futures import wait
from pathlib import Path

import pytest

from search_engine.cli import main
from search_engine.evaluation.config import EvaluationConfig
from search_engine.evaluation.executor import LocalExecutor
from search_engine.protocols import EvaluationRequest
from search_engine.search import cli_commands
from search_engine.synthesis.base import Proposal

REPO = Path(__file__).resolve().parents[3]
PROBLEM = REPO / "search_engine" / "problems_library" / "softmax.py"
FAST = (REPO / "tests" / "search_engine" / "evaluation" / "candidates" / "clean_softmax.py"
        ).read_text()


def slow_candidate(n: int) -> str:
    """The clean kernel, but its forward first spins (the static checks allow no `time`
    import): 10^9 steps of Python take over 20 s on any CPU, and it is called 6 times."""
    source = FAST.replace("    def forward(self, x):\n",
                          "    def forward(self, x):\n"
                          f"        spin = {n}\n"
                          "        for step in range(10 ** 9):\n"
                          "            spin ^= step\n")
    assert source != FAST
    return source


class SlowAfterFirst:
    """One quick correct kernel, then only kernels whose evaluation takes 20 s."""

    name, supports_crossover = "slow-after-first", False

    def __init__(self) -> None:
        self.made = 0

    def propose(self, request, n, rng):
        out = []
        for _ in range(n):
            source = FAST if self.made == 0 else slow_candidate(self.made)
            self.made += 1
            out.append(Proposal(source, "fast" if source is FAST else "slow"))
        return out


class Recording:
    """The shared executor for one command: records its futures; shutdown is the
    fixture's (the reference and warm sandboxes stay for the next test)."""

    def __init__(self, executor: LocalExecutor):
        self.executor, self.futures = executor, []

    def submit(self, request):
        future = self.executor.submit(request)
        self.futures.append(future)
        return future

    def cancel(self, future):
        self.executor.cancel(future)

    def shutdown(self):
        pass


@pytest.fixture(scope="module")
def warm_executor():
    """A real LocalExecutor whose reference is computed, and how long one quick evaluation
    takes on this machine now (the interpreter on a shared CPU varies a lot)."""
    config = EvaluationConfig(trials=5, interpreter_reps=1, ncu="off")
    with LocalExecutor(max_workers=2, config=config) as executor:
        request = EvaluationRequest(PROBLEM.read_text(), FAST, target="interpreter",
                                    timeout_s=90)
        assert executor.submit(request).result(timeout=300).status == "correct"
        started = time.monotonic()
        assert executor.submit(request).result(timeout=300).status == "correct"
        yield executor, time.monotonic() - started


def optimize(capsys, monkeypatch, executor, max_seconds: float | None, signal_at=None):
    recording = Recording(executor)
    monkeypatch.setattr(cli_commands, "make_synthesizer", lambda args: SlowAfterFirst())
    monkeypatch.setattr(cli_commands, "make_executor", lambda args: recording)
    if signal_at is not None:
        sig, delay = signal_at
        timer = threading.Timer(delay, signal.raise_signal, (sig,))
        timer.start()
    started = time.monotonic()
    code = main(["optimize", "--problem", str(PROBLEM), "--target", "interpreter",
                 "--budget", "40", "--parallel", "2", "--children", "2", "--no-ncu",
                 "--timeout", "90", "--json"]
                + (["--max-seconds", f"{max_seconds:g}"] if max_seconds else []))
    elapsed = time.monotonic() - started
    _, running = wait(recording.futures, timeout=5)
    assert not running, "a cancelled evaluation's sandbox was not killed"
    return code, json.loads(capsys.readouterr().out.strip().splitlines()[-1]), elapsed


def test_max_seconds_stops_within_seconds_with_evaluations_of_20_s(capsys, monkeypatch,
                                                                    warm_executor):
    code, summary, elapsed = optimize(capsys, monkeypatch, warm_executor[0], 5)
    assert elapsed < 10, f"the search ran {elapsed:.1f} s under a 5 s limit"
    assert summary["stop_reason"] == "time_limit" and "time limit" in summary["reason"]
    assert summary["status"] == "completed"
    assert [n["status"] for n in summary["nodes"]].count("cancelled") >= 1


def test_max_seconds_keeps_the_best_so_far(capsys, monkeypatch, warm_executor):
    executor, quick_s = warm_executor
    limit = round(1.5 * quick_s + 4)  # the quick kernel is judged; the 20 s ones are not
    code, summary, elapsed = optimize(capsys, monkeypatch, executor, limit)
    assert elapsed < limit + 5
    assert summary["stop_reason"] == "time_limit"
    assert code == 0 and summary["best"]["node_id"] == 1, summary["nodes"]
    assert summary["best"]["status"] == "correct"
    assert {n["status"] for n in summary["nodes"][2:]} == {"cancelled"}, summary["nodes"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_search_and_prints_the_best_so_far(capsys, monkeypatch,
                                                             warm_executor, sig):
    executor, quick_s = warm_executor
    at = round(1.5 * quick_s + 4)
    code, summary, elapsed = optimize(capsys, monkeypatch, executor, None, (sig, at))
    assert elapsed < at + 5
    assert summary["status"] == "cancelled" and summary["stop_reason"] == "cancelled"
    assert code == 0 and summary["best"]["node_id"] == 1
