"""LocalExecutor: futures of results; one GPU timing at a time."""

import threading
import time
from unittest.mock import patch

from search_engine.evaluation.config import EvaluationConfig
from search_engine.evaluation.executor import LocalExecutor
from search_engine.evaluation.gpu_lock import gpu_timing_lock
from search_engine.protocols import EvaluationRequest

from .conftest import candidate


def test_executor_returns_results_through_futures(softmax_problem):
    config = EvaluationConfig(interpreter_reps=1, ncu="off")
    with LocalExecutor(max_workers=2, config=config) as ex:
        futures = [ex.submit(EvaluationRequest(softmax_problem.source, candidate(name),
                                               target="interpreter", timeout_s=60))
                   for name in ("clean_softmax", "syntax_error")]
        statuses = [f.result(timeout=120).status for f in futures]
    assert statuses == ["correct", "compile_error"]


def test_bad_request_becomes_a_result_not_a_crash():
    with LocalExecutor(max_workers=1) as ex:
        r = ex.submit(EvaluationRequest("x = 1\n", "x", target="interpreter")).result()
    assert r.status == "problem_defect" and "not a KernelBench problem" in r.message


def test_gpu_timing_lock_is_exclusive_across_threads():
    inside, overlaps = [], []

    def worker():
        with gpu_timing_lock("test-device"):
            inside.append(1)
            if len(inside) > 1:
                overlaps.append(1)
            time.sleep(0.05)
            inside.pop()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == []


def test_warm_pool_is_sized_for_gpu_start_up_times():
    from search_engine.evaluation.config import EvaluationConfig
    from search_engine.evaluation.executor import LocalExecutor

    auto = EvaluationConfig()
    with LocalExecutor(max_workers=1, config=auto, warm_sandboxes=False) as one, \
            LocalExecutor(max_workers=4, config=auto, warm_sandboxes=False) as four:
        assert one._warm_pool_size(auto, interpreter=True) == 2
        assert four._warm_pool_size(auto, interpreter=False) == 8
        assert four._warm_pool_size(EvaluationConfig(warm_pool_size=3), interpreter=False) == 3
    # a screening takes its lanes at once: the GPU pool holds at least that many warm
    with patch("os.cpu_count", return_value=16):
        assert one._warm_pool_size(auto, interpreter=False) == 8
        assert one._warm_pool_size(EvaluationConfig(screen_lanes=12), interpreter=False) == 12
    with patch("os.cpu_count", return_value=4):
        assert one._warm_pool_size(auto, interpreter=False) == 4
