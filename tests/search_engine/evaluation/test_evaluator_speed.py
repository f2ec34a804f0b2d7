"""Evaluator speed and quiet timing: warm single-use sandboxes, quiet GPU locks, baselines
cached on disk, noisy timings re-measured and labelled."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from search_engine.evaluation.config import EvaluationConfig
from search_engine.evaluation.executor import LocalExecutor
from search_engine.evaluation.gpu_lock import gpu_activity, quiet_gpu
from search_engine.protocols import EvaluationRequest

from .conftest import candidate


def test_warm_sandboxes_are_single_use(softmax_problem):
    config = EvaluationConfig(interpreter_reps=1, ncu="off")
    with LocalExecutor(max_workers=1, config=config) as ex:
        results = [ex.submit(EvaluationRequest(softmax_problem.source, candidate("clean_softmax"),
                                               target="interpreter", timeout_s=60)).result()
                   for _ in range(3)]
        pool = ex.sandbox_pool("interpreter", config)
        assert pool.taken == 3 and pool.started >= 3  # a fresh process for every candidate
    assert [r.status for r in results] == ["correct"] * 3
    # the later candidates found their sandbox already started
    assert all(r.diagnostics["phases"]["startup"] < 0.5 for r in results[1:])


def test_a_warm_sandbox_that_died_waiting_is_never_a_candidates_verdict(softmax_problem):
    """A warm sandbox killed while it waited (the OOM killer, an operator) is thrown away on
    take: the candidate gets a live one and is judged on its own run."""
    import signal

    config = EvaluationConfig(interpreter_reps=1, ncu="off")
    with LocalExecutor(max_workers=1, config=config) as ex:
        pool = ex.sandbox_pool("interpreter", config)
        deadline = time.monotonic() + 120
        while pool._ready.qsize() < pool.size and time.monotonic() < deadline:
            time.sleep(0.2)
        warm = list(pool._ready.queue)
        assert len(warm) == pool.size
        for session in warm:
            session.process.popen.send_signal(signal.SIGKILL)
            session.process.popen.wait(10)
        result = ex.submit(EvaluationRequest(softmax_problem.source, candidate("clean_softmax"),
                                             target="interpreter", timeout_s=60)).result()
        assert all(s.process.popen.poll() is not None for s in warm)
    assert result.status == "correct", result.message


def test_a_pool_that_cannot_start_a_sandbox_falls_back_to_a_fresh_one(softmax_problem,
                                                                       monkeypatch):
    """The pool's start failing (the host's fault: the candidate is not in it yet) is not
    the candidate's runtime_error: it runs in a sandbox of its own."""
    from search_engine.evaluation.sandbox import SandboxDied
    from search_engine.evaluation.sandbox_pool import SandboxPool

    def broken_take(self, timeout_s):
        raise SandboxDied("the sandbox closed its socket (host out of processes)")

    monkeypatch.setattr(SandboxPool, "take", broken_take)
    config = EvaluationConfig(interpreter_reps=1, ncu="off")
    with LocalExecutor(max_workers=1, config=config) as ex:
        result = ex.submit(EvaluationRequest(softmax_problem.source, candidate("clean_softmax"),
                                             target="interpreter", timeout_s=60)).result()
    assert result.status == "correct", result.message
    assert result.diagnostics["phases"]["startup"] > 0  # started in the evaluation itself


def test_a_candidate_cannot_leave_state_for_the_next_one(softmax_problem, tmp_path):
    """The first candidate writes into its workdir and its process; the second sees neither."""
    leave = candidate("clean_softmax") + '''

STATE = {}
STATE["mark"] = open("left_behind.txt", "w").write("x")
'''
    look = candidate("clean_softmax").replace(
        "return launch(x.contiguous())",
        "assert not __import__('os').path.exists('left_behind.txt')\n"
        "        return launch(x.contiguous())")
    config = EvaluationConfig(interpreter_reps=1, ncu="off", static_checks=False)
    with LocalExecutor(max_workers=1, config=config) as ex:
        first = ex.submit(EvaluationRequest(softmax_problem.source, leave,
                                            target="interpreter", timeout_s=60)).result()
        second = ex.submit(EvaluationRequest(softmax_problem.source, look,
                                             target="interpreter", timeout_s=60)).result()
    assert first.status == "correct", first.message
    assert second.status == "correct", second.message


def test_timing_waits_for_other_gpu_work_and_excludes_it():
    events = []

    def correctness_work():
        with gpu_activity("test-quiet"):
            events.append("work-start")
            time.sleep(0.3)
            events.append("work-end")

    worker = threading.Thread(target=correctness_work)
    worker.start()
    time.sleep(0.05)
    with quiet_gpu("test-quiet", quiet_wait_s=5) as quiet:
        events.append("timing")
        late = threading.Thread(target=correctness_work)
        late.start()
        time.sleep(0.2)
        events.append("timing-end")
    worker.join()
    late.join()
    assert quiet is True
    # the timing started only after the first work ended; the late work waited for it
    assert events.index("timing") > events.index("work-end")
    assert events.index("timing-end") < events.index("work-start", events.index("timing"))


def test_timing_that_cannot_get_quiet_says_so():
    release = threading.Event()

    def stuck_work():
        with gpu_activity("test-stuck"):
            release.wait(5)

    worker = threading.Thread(target=stuck_work)
    worker.start()
    time.sleep(0.05)
    t0 = time.monotonic()
    with quiet_gpu("test-stuck", quiet_wait_s=0.2) as quiet:
        waited = time.monotonic() - t0
    release.set()
    worker.join()
    assert quiet is False and waited < 2


def test_a_waiting_timing_is_not_starved_by_overlapping_work():
    """Calls that overlap one another would keep a plain shared/exclusive flock busy for
    as long as they keep coming; the gate lets the timing in once the calls in flight end."""
    stop = threading.Event()

    def stream_of_calls(offset: float):
        time.sleep(offset)
        while not stop.is_set():
            with gpu_activity("test-starve"):
                time.sleep(0.12)

    workers = [threading.Thread(target=stream_of_calls, args=(i * 0.04,)) for i in range(3)]
    for w in workers:
        w.start()
    time.sleep(0.3)  # the calls now overlap: at every instant one of them holds the lock
    t0 = time.monotonic()
    with quiet_gpu("test-starve", quiet_wait_s=5) as quiet:
        waited = time.monotonic() - t0
    stop.set()
    for w in workers:
        w.join()
    assert quiet is True and waited < 1.0


def test_noisy_timings_are_labelled():
    from search_engine.evaluation.pipeline import _noise, _timing_quality

    config = EvaluationConfig()
    assert _noise({"median_ms": 1.0, "iqr_ms": 0.05}) == pytest.approx(0.05)
    assert _noise({"median_ms": None, "iqr_ms": None}) == float("inf")
    steady = {"timing": {"candidate": {"samples": 50}}, "timing_noise": 0.02,
              "timing_attempts": 1, "timing_quiet": True}
    assert _timing_quality(steady, config)["label"] == "steady"
    noisy = {"timing": {"candidate": {"samples": 4}}, "timing_noise": 0.4,
             "timing_attempts": 3, "timing_quiet": False}
    label = _timing_quality(noisy, config)["label"]
    assert "noisy: IQR 40% of the median after 3" in label
    assert "few samples" in label and "still on the GPU" in label


class _FakeSession:
    """Answers `time` requests with scripted stats (the parent's re-measure loop)."""

    def __init__(self, iqrs):
        self.iqrs, self.calls = list(iqrs), 0

    def request(self, kind, header, max_reply_bytes=0):
        self.calls += 1
        iqr = self.iqrs.pop(0)
        return {"ok": True, "stats": {"median_ms": 1.0, "iqr_ms": iqr, "samples": 40}}, []


def test_noisy_timing_is_measured_again_and_the_steadiest_kept():
    from search_engine.evaluation.pipeline import _Run
    from search_engine.hardware import get_target
    from search_engine.problems_library import library_problem

    run = _Run(library_problem("softmax", scale="small"), "", get_target("h200"), "strict", 60,
               EvaluationConfig(retime_attempts=2))
    session, report = _FakeSession([0.5, 0.3, 0.2]), {}
    reply = run._time_until_steady(session, {}, report)
    assert session.calls == 3 and reply["stats"]["iqr_ms"] == 0.2
    assert report["timing_attempts"] == 3
    session, report = _FakeSession([0.5, 0.03]), {}
    run._time_until_steady(session, {}, report)
    assert session.calls == 2 and report["timing_noise"] == pytest.approx(0.03)


def test_baselines_are_cached_on_disk(tmp_path):
    from search_engine.evaluation.reference import BaselineCache

    cache = BaselineCache(str(tmp_path))
    assert cache.get("k1") is None
    cache.put("k1", {"eager": {"median_ms": 1.5, "iqr_ms": 0.01, "samples": 30, "method": "x"}})
    again = BaselineCache(str(tmp_path))  # another run, another process
    assert again.get("k1")["eager"]["median_ms"] == 1.5
    cache.put("k2", {"eager": {"median_ms": None, "method": "failed: boom"}})
    assert again.get("k2") is None  # failures are measured again next time
    (Path(tmp_path) / "baselines" / "k3.json").write_text("{not json")
    assert again.get("k3") is None
    assert cache.key(None, [], 0, "cpu", EvaluationConfig(), 0) is None  # interpreter: never


def test_compile_only_launches_run_nothing_and_record_nothing():
    """The `warm` pass turns every Triton launch into a compile: on the GPU nothing of the
    candidate's kernels runs outside the activity lock (on the interpreter, whose compile
    is a no-op, the kernel simply does not run)."""
    import torch
    import triton
    import triton.language as tl

    from search_engine.evaluation.hooks import LaunchRecorder

    @triton.jit
    def fill_kernel(out_ptr, n: tl.constexpr):
        tl.store(out_ptr + tl.arange(0, n), tl.full((n,), 7.0, tl.float32))

    recorder = LaunchRecorder()
    recorder.install()
    try:
        out = torch.zeros(16)
        recorder.compile_only = True
        fill_kernel[(1,)](out, 16)
        assert out.sum().item() == 0 and recorder.launches == []
        recorder.compile_only = False
        fill_kernel[(1,)](out, 16)
        assert out.sum().item() == 7 * 16 and len(recorder.launches) == 1
    finally:
        recorder.uninstall()
