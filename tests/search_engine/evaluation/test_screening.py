"""Screening (issue 29): many configurations of one program in one warm sandbox, each
spot-checked by the parent against the reference and timed; never a reported result."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from search_engine.evaluation.config import EvaluationConfig
from search_engine.evaluation.reference import ReferenceCache
from search_engine.evaluation.screening import _lanes_with_memory, screen
from search_engine.problems_library import library_problem
from tests.search_engine.evaluation.conftest import candidate

CLEAN = candidate("clean_softmax")
WRONG = CLEAN.replace("num / tl.sum(num, axis=0)", "num / (tl.sum(num, axis=0) + 1.0)")
WIDER = CLEAN.replace("BLOCK=triton.next_power_of_2", "BLOCK=2 * triton.next_power_of_2")


@pytest.fixture(scope="module")
def tiny_softmax():
    return library_problem("softmax", scale="small").with_sizes(batch_size=4, dim=32)


@pytest.fixture(scope="module")
def references():
    cache = ReferenceCache()
    yield cache
    cache.close()


def run_screen(problem, sources, references, **config_changes):
    config = EvaluationConfig(ncu="off", **config_changes)
    return screen(problem, sources, target="interpreter", config=config, timeout_s=60,
                  reference_cache=references)


def test_every_configuration_is_timed_and_a_wrong_one_fails_the_spot_check(
        tiny_softmax, references):
    result = run_screen(tiny_softmax, [CLEAN, WRONG, WIDER], references)
    clean, wrong, wider = result.configurations
    for timed in (clean, wider):
        assert timed.passed, timed.reason
        assert timed.median_ms > 0 and timed.samples >= 1 and timed.method == "interpreter"
    assert not wrong.passed and wrong.median_ms is None
    assert wrong.reason.startswith("incorrect: trial "), wrong.reason
    assert [c.index for c in result.ranked()] == sorted(
        [0, 2], key=lambda i: result.configurations[i].median_ms)
    assert result.sandboxes == 1  # one warm sandbox screened all three
    # where the time went, per phase (the GPU throughput numbers read these)
    assert {"reference_s", "sandbox_s", "compile_s", "check_s", "timing_s"} <= set(result.phases)
    assert all(c.seconds > 0 and not c.skipped for c in result.configurations)


def test_no_configuration_starts_after_the_deadline(tiny_softmax, references):
    result = screen(tiny_softmax, [CLEAN, WIDER], target="interpreter", timeout_s=60,
                    config=EvaluationConfig(ncu="off"), reference_cache=references,
                    deadline_s=0.0)
    assert [c.skipped for c in result.configurations] == [True, True]
    assert not result.ranked()
    assert all(c.reason.startswith("not screened") for c in result.configurations)
    assert "2 not screened: out of time" in result.message


def test_a_configuration_cannot_find_the_reference_outputs(tiny_softmax, references):
    """It searches its whole process for the answer; the parent never sent it there."""
    source = candidate("screening/finds_reference")
    result = run_screen(tiny_softmax, [source], references, static_checks=False)
    (found,) = result.configurations
    assert not found.passed and found.reason.startswith("incorrect"), found.reason


def test_a_forged_timing_fails_and_the_next_configuration_gets_a_clean_sandbox(
        tiny_softmax, references):
    forger = candidate("screening/forges_timing")
    threads = candidate("screening/starts_thread")
    result = run_screen(tiny_softmax, [forger, CLEAN, threads, CLEAN], references,
                        static_checks=False)
    forged, clean, threaded, clean_again = result.configurations
    assert not forged.passed and forged.median_ms is None
    assert "runtime.harness_patch" in forged.reason and "on_time" in forged.reason
    assert "runtime.timer_patch" in forged.reason and "time.perf_counter" in forged.reason
    assert clean.passed and clean.median_ms > 1e-3, clean  # timed by an untouched harness
    assert not threaded.passed and "runtime.thread_spawn" in threaded.reason, threaded.reason
    assert clean_again.passed, clean_again.reason  # in a sandbox of its own


def test_static_checks_fail_a_configuration_before_any_sandbox(tiny_softmax, references):
    result = run_screen(tiny_softmax, [candidate("timer_patch")], references)
    (patched,) = result.configurations
    assert not patched.passed and patched.reason.startswith("hack_suspected"), patched.reason
    assert result.sandboxes == 0


def test_resident_screening_spot_checks_in_the_problems_sandbox(tiny_softmax):
    """Tensors kept in shared buffers (the GPU's way): the problem's sandbox compares."""
    forger = candidate("screening/forges_timing")
    result = screen(tiny_softmax, [WRONG, forger, CLEAN], target="interpreter", timeout_s=60,
                    config=EvaluationConfig(ncu="off", resident="on", static_checks=False))
    wrong, forged, clean = result.configurations
    assert wrong.reason.startswith("incorrect: trial "), wrong.reason
    assert "runtime.harness_patch" in forged.reason, forged.reason
    assert clean.passed and clean.median_ms > 0, clean.reason
    # the problem sandbox's part of the phases, named apart (they are within check/timing)
    assert result.phases["step_judge_s"] > 0 and result.phases["step_call_s"] > 0
    # the timing request and the kept outputs' hand-over; the compile pass before the first
    # call is its own step too (none on the interpreter: no compile to run ahead)
    for step in ("time", "share_kept"):
        assert result.phases[f"step_{step}_s"] > 0, result.phases
    assert result.phases["step_warm_s"] >= 0
    # a judgement's time split: queued (for the sandbox or the GPU), then its parts there
    parts = [result.phases[f"step_judge_{part}_s"]
             for part in ("import", "inputs", "compare", "samples", "release")]
    assert result.phases["step_judge_queue_s"] >= 0 and result.phases["step_judge_compare_s"] > 0
    assert 0 <= result.phases["step_call_queue_s"] <= result.phases["step_call_s"]
    # the timing request's wait for a quiet GPU and its measurement loop (the rest: setting
    # the loop up, the flush buffer, the reply)
    assert 0 < result.phases["step_time_loop_s"] <= result.phases["step_time_s"]
    assert result.phases["step_time_queue_s"] >= 0
    spent = sum(parts) + result.phases["step_judge_queue_s"]
    assert 0 < spent <= result.phases["step_judge_s"] + 1e-3, result.phases  # (4-digit sums)


def test_a_cancelled_screening_kills_the_sandboxes_of_its_lanes(tiny_softmax):
    """The executor's cancel reaches sandboxes the screening's lanes took (their threads
    run in the cancelled evaluation's context): the hanging configuration ends now, not
    after its 300 s."""
    import time

    from search_engine.evaluation.executor import LocalExecutor
    from search_engine.protocols import ScreenRequest

    with LocalExecutor(max_workers=1, config=EvaluationConfig(ncu="off"),
                       warm_sandboxes=False) as executor:
        first = executor.screen(ScreenRequest(tiny_softmax, [CLEAN], "interpreter"))
        assert first.result().configurations[0].passed  # the reference is cached now
        future = executor.screen(ScreenRequest(tiny_softmax, [candidate("hang"), CLEAN],
                                               "interpreter", timeout_s=300))
        while not future.running():
            time.sleep(0.05)
        time.sleep(1.0)  # most likely inside the hanging call; any stage must end alike
        executor.cancel(future)
        hung, after = future.result(timeout=120).configurations
    assert not hung.passed and not after.passed  # every sandbox it takes is killed


def test_the_lanes_come_from_the_environment_and_bad_values_are_refused(monkeypatch):
    monkeypatch.setenv("KERNELHUB_SCREEN_LANES", "3")
    assert EvaluationConfig().screen_lanes == 3
    monkeypatch.setenv("KERNELHUB_SCREEN_LANES", "many")
    with pytest.raises(ValueError, match="KERNELHUB_SCREEN_LANES must be a whole number"):
        EvaluationConfig()
    monkeypatch.delenv("KERNELHUB_SCREEN_LANES")
    assert EvaluationConfig().screen_lanes == 0  # auto


def test_time_queued_behind_other_lanes_is_its_own_phase():
    # the timing phase of a lane that waited for the GPU lock counts the wait apart, so a
    # screening's phases say whether it was bound by compiling or by the GPU
    from types import SimpleNamespace

    from search_engine.evaluation.screening import _Lane

    lane = _Lane.__new__(_Lane)
    lane.phases = {"compile_s": 0.5, "check_s": 1.0, "timing_s": 2.0}
    lane._split_gpu_wait(SimpleNamespace(lock_wait_s=1.5))
    assert lane.phases == {"compile_s": 0.5, "check_s": 1.0, "timing_s": 0.5,
                           "gpu_wait_s": 1.5}
    unqueued = _Lane.__new__(_Lane)
    unqueued.phases = {"timing_s": 2.0}
    unqueued._split_gpu_wait(SimpleNamespace(lock_wait_s=0.0))
    assert unqueued.phases == {"timing_s": 2.0}


def test_resident_lanes_are_bounded_by_the_problem_sandboxs_trial_slots():
    """A lane holds its trial slot for life: lanes past the slots would only wait."""
    one_slot = SimpleNamespace(resident=True, link=SimpleNamespace(slot_count=1))
    assert _lanes_with_memory(8, one_slot) == 1
    four = SimpleNamespace(resident=True, link=SimpleNamespace(slot_count=4))
    assert _lanes_with_memory(8, four) == 4 and _lanes_with_memory(2, four) == 2
    copied = SimpleNamespace(resident=False, link=None)  # tensors copied: no slots
    assert _lanes_with_memory(8, copied) == 8


def test_a_screened_configuration_is_called_once_besides_its_timing(tiny_softmax, monkeypatch):
    """The spot-check's call, then the timed loop (its outputs judged): the full
    evaluation's call after timing is not a screening's (each call and judge queues in the
    problem's one sandbox)."""
    from search_engine.evaluation.resident import ResidentDrive

    calls = []
    original = ResidentDrive._call
    monkeypatch.setattr(ResidentDrive, "_call",
                        lambda self, *a, **k: calls.append(a) or original(self, *a, **k))
    result = screen(tiny_softmax, [CLEAN], target="interpreter", timeout_s=60,
                    config=EvaluationConfig(ncu="off", resident="on", static_checks=False))
    assert result.configurations[0].passed, result.configurations[0].reason
    assert len(calls) == 1


def test_a_request_to_the_problems_sandbox_says_how_long_it_queued(tmp_path):
    """Lanes share one problem sandbox: a request waits for the one before it, and the
    screening's phases count that wait apart from the judgement's work."""
    import threading
    import time

    from search_engine.evaluation.reference import ResidentReference

    class Session:
        def renew(self, timeout_s):
            pass

        def request(self, kind, header=None, **kwargs):
            return {"ok": True, "kind": kind}, []

        def close(self):
            pass

    link = ResidentReference(Session(), tmp_path / "ref", timeout_s=5.0, slots=1)
    held, waits = threading.Event(), []

    def busy():
        with link.lock:  # another lane's request in the sandbox
            held.set()
            time.sleep(0.3)

    other = threading.Thread(target=busy)
    other.start()
    held.wait()
    reply, _ = link.ask("judge", {}, on_wait=waits.append)
    other.join()
    link.close()
    assert reply["kind"] == "judge" and len(waits) == 1 and waits[0] >= 0.2, waits
