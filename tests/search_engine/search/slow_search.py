"""A search whose evaluations are slow, through the real evaluator: one quick correct
softmax kernel, then kernels whose forward spins for over 20 s (shared by the hard-limit
tests of the CLI and of the web session)."""

from __future__ import annotations

import time
from pathlib import Path

from search_engine.evaluation.config import EvaluationConfig
from search_engine.evaluation.executor import LocalExecutor
from search_engine.protocols import EvaluationRequest
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
    """`quick` quick correct kernels (one by default), then only kernels whose evaluation
    takes 20 s."""

    name, supports_crossover = "slow-after-first", False

    def __init__(self, quick: int = 1) -> None:
        self.made, self.quick = 0, quick

    def propose(self, request, n, rng):
        out = []
        for _ in range(n):
            source = FAST if self.made < self.quick else slow_candidate(self.made)
            self.made += 1
            out.append(Proposal(source, "fast" if source is FAST else "slow"))
        return out


class Recording:
    """The shared executor for one command: records its futures; shutdown is the
    fixture's (the reference and warm sandboxes stay for the next test). `on_submit`, if
    given, is called with the number of evaluations submitted so far, after each one."""

    def __init__(self, executor: LocalExecutor, on_submit=None):
        self.executor, self.futures, self.on_submit = executor, [], on_submit

    def submit(self, request):
        future = self.executor.submit(request)
        self.futures.append(future)
        if self.on_submit is not None:
            self.on_submit(len(self.futures))
        return future

    def cancel(self, future):
        self.executor.cancel(future)

    def shutdown(self):
        pass


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


def limit_after_quick(quick_s: float) -> int:
    """A limit by which the quick kernel is judged and the slow ones are still running.
    The margin is wide because `quick_s` was measured once, and a loaded CI box (the other
    test worker busy) can take twice as long for the same evaluation; a slow kernel's
    forward spins for over 20 s a call, six calls, so it is still running far beyond this."""
    return round(2.5 * quick_s + 6)
