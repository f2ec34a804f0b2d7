"""Executors the web app hands to the search: where evaluations run.

- embedded default: `search_engine.evaluation.executor.LocalExecutor` (sandboxed
  subprocesses on this host, one timing at a time per GPU);
- distributed mode: `CeleryExecutor`, which queues each evaluation on `gpu.<target>`, where
  one worker process per GPU runs the same `evaluate()`.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict

from django.conf import settings

from search_engine.evaluation.result import EvaluationResult
from search_engine.protocols import EvaluationRequest


def gpu_queue_name(target: str) -> str:
    return f"gpu.{target}"


class CeleryExecutor:
    """Submit evaluations to Celery; a small thread pool waits on the results."""

    def __init__(self, max_in_flight: int = 8, result_timeout_s: float | None = None):
        self._waiters = ThreadPoolExecutor(max_workers=max_in_flight,
                                           thread_name_prefix="kernelhub-celery-wait")
        self._timeout = result_timeout_s or settings.KERNELHUB_EVAL_TIMEOUT_S * 4

    def submit(self, request: EvaluationRequest) -> "Future[EvaluationResult]":
        from kernelhub.optimization.tasks import evaluate_candidate_task

        payload = asdict(request)
        payload["options"] = {k: v for k, v in request.options.items() if k != "config"}
        async_result = evaluate_candidate_task.apply_async(
            args=[payload], queue=gpu_queue_name(request.target)
        )
        return self._waiters.submit(self._wait, async_result, request)

    def _wait(self, async_result, request: EvaluationRequest) -> EvaluationResult:
        try:
            # The session loop is itself a task on the `search` queue, waiting on tasks of
            # other queues (never its own), so the deadlock Celery guards against cannot occur.
            data = async_result.get(timeout=self._timeout, propagate=True,
                                    disable_sync_subtasks=False)
        except Exception as exc:  # a lost worker or broker error is a result, not a crash
            return EvaluationResult(
                status="runtime_error", target=request.target,
                precision_policy=request.precision_policy,
                message=f"the GPU worker did not return a result: {type(exc).__name__}: {exc}",
            )
        return EvaluationResult.from_dict(data)

    def shutdown(self) -> None:
        self._waiters.shutdown(wait=False, cancel_futures=True)


_local_executor = None


def local_executor():
    """One LocalExecutor per process, shared by sessions (it caches references)."""
    global _local_executor
    if _local_executor is None:
        from search_engine.evaluation.executor import LocalExecutor

        _local_executor = LocalExecutor()
    return _local_executor


class SharedExecutorHandle:
    """Lets a session `shutdown()` its executor without stopping the shared pool."""

    def __init__(self, executor):
        self._executor = executor

    def submit(self, request: EvaluationRequest):
        return self._executor.submit(request)

    def shutdown(self) -> None:
        pass


def executor_for_settings():
    if settings.KERNELHUB_EXECUTOR == "celery":
        return CeleryExecutor()
    return SharedExecutorHandle(local_executor())
