"""Hard limits: a search out of time (or stopped by a signal) kills the evaluations in
flight, keeps the best so far and says why it stopped, through the real evaluator (the
Triton interpreter, real sandboxes) and the real `optimize` command."""

from __future__ import annotations

import json
import signal
import threading
import time
from concurrent.futures import wait

import pytest

from search_engine.cli import main
from search_engine.search import cli_commands

from . import slow_search
from .slow_search import PROBLEM, Recording, SlowAfterFirst, limit_after_quick


@pytest.fixture(scope="module")
def warm_executor():
    yield from slow_search.warm_executor()


class SignalOnSlowEvaluations:
    """Raises `sig` a second after the search submits its second evaluation: the search
    runs its first one alone, so by then the quick kernel is judged and a slow one is in
    flight, however long the quick one took on a loaded box (a fixed delay raced it)."""

    def __init__(self, sig):
        self.sig, self.raised_at = sig, None

    def __call__(self, submitted: int) -> None:
        if submitted == 2 and self.raised_at is None:
            self.raised_at = time.monotonic() + 1.0
            threading.Timer(1.0, signal.raise_signal, (self.sig,)).start()


def optimize(capsys, monkeypatch, executor, max_seconds: float | None, on_submit=None,
             quick: int = 1):
    recording = Recording(executor, on_submit)
    monkeypatch.setattr(cli_commands, "make_synthesizer", lambda args: SlowAfterFirst(quick))
    monkeypatch.setattr(cli_commands, "make_executor", lambda args: recording)
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
    # every kernel is slow, so one is in flight at the limit however loaded the box is (with
    # a quick first kernel, a quick evaluation as long as the limit left none in flight);
    # keeping the best so far is the next test's
    code, summary, elapsed = optimize(capsys, monkeypatch, warm_executor[0], 5, quick=0)
    assert elapsed < 10, f"the search ran {elapsed:.1f} s under a 5 s limit"
    assert summary["stop_reason"] == "time_limit" and "time limit" in summary["reason"]
    assert summary["status"] == "completed"
    assert [n["status"] for n in summary["nodes"]].count("cancelled") >= 1


def test_max_seconds_keeps_the_best_so_far(capsys, monkeypatch, warm_executor):
    executor, quick_s = warm_executor
    limit = limit_after_quick(quick_s)
    code, summary, elapsed = optimize(capsys, monkeypatch, executor, limit)
    assert elapsed < limit + 5
    assert summary["stop_reason"] == "time_limit"
    assert code == 0 and summary["best"]["node_id"] == 1, summary["nodes"]
    assert summary["best"]["status"] == "correct"
    assert {n["status"] for n in summary["nodes"][2:]} == {"cancelled"}, summary["nodes"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_search_and_prints_the_best_so_far(capsys, monkeypatch,
                                                             warm_executor, sig):
    stopper = SignalOnSlowEvaluations(sig)
    started = time.monotonic()
    code, summary, elapsed = optimize(capsys, monkeypatch, warm_executor[0], None, stopper)
    assert stopper.raised_at is not None, "the search never submitted a second evaluation"
    assert started + elapsed - stopper.raised_at < 5, "the search ran on after the signal"
    assert summary["status"] == "cancelled" and summary["stop_reason"] == "cancelled"
    assert code == 0 and summary["best"]["node_id"] == 1
