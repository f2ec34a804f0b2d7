"""Celery tasks (thin): session loops and problem coverage on queue `search`, evaluations and
screenings on `gpu.<target>`. `kernelhub.placement` decides where each runs (in the embedded
default it calls the same bodies in a thread of the server)."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import CancelledError

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from kernelhub.optimization import ledger, runner
from kernelhub.optimization.executors import local_executor
from kernelhub.optimization.models import EvaluationJob
from kernelhub.optimization.services import problem_offline_coverage_compute
from search_engine.evaluation.result import EvaluationResult
from search_engine.protocols import EvaluationRequest, ScreenRequest

logger = logging.getLogger(__name__)
BUSY_RETRY_S = 2 * ledger.JOB_ALIVE_S  # a delivery that found another one running waits


@shared_task(name="kernelhub.evaluate_candidate", bind=True, acks_late=True,
             reject_on_worker_lost=True, max_retries=20,
             soft_time_limit=settings.KERNELHUB_EVAL_SOFT_LIMIT_S,
             time_limit=settings.KERNELHUB_EVAL_HARD_LIMIT_S)
def evaluate_candidate_task(self, job_id: int) -> str:
    """Run ledger job `job_id` on this worker's GPU if this delivery is the current one;
    the result goes to the ledger, once. Returns what happened (for the worker's log)."""
    return _run_job(self, job_id, lambda executor, request: executor.submit(
        EvaluationRequest(**request)), _evaluate)


@shared_task(name="kernelhub.screen_family", bind=True, acks_late=True,
             reject_on_worker_lost=True, max_retries=20,
             soft_time_limit=settings.KERNELHUB_SCREEN_SOFT_LIMIT_S,
             time_limit=settings.KERNELHUB_SCREEN_SOFT_LIMIT_S + 60)
def screen_family_task(self, job_id: int) -> str:
    """Screen ledger job `job_id`'s family of configurations (issue 29) in this worker, as
    `evaluate_candidate_task` runs an evaluation; the ScreenResult dict goes to the ledger."""
    return _run_job(self, job_id, lambda executor, request: executor.screen(
        ScreenRequest(**request)), _screened)


def _run_job(task, job_id: int, start, outcome) -> str:
    """The ledger's side of a GPU job: claim this delivery, `start(executor, request)` with a
    heartbeat (a job cancelled meanwhile kills its work), store `outcome(future, request)`."""
    claim = ledger.job_claim(job_id, task.request.id, task.request.hostname or "worker")
    if claim == "busy":  # a redelivery while the first run may still beat: look again soon
        raise task.retry(countdown=BUSY_RETRY_S)
    if claim != "run":
        return claim
    beating = threading.Event()
    request = EvaluationJob.objects.get(pk=job_id).request
    executor = local_executor()
    future = start(executor, request)
    threading.Thread(target=_beat, args=(job_id, task.request.id, beating,
                                         lambda: executor.cancel(future)), daemon=True).start()
    try:
        result = outcome(future, request)
    finally:
        beating.set()
    stored = ledger.with_db_retry(lambda: ledger.job_store(job_id, task.request.id, result))
    return "stored" if stored else "duplicate"


def _evaluate(future, request: dict) -> dict:
    try:
        return future.result().to_dict()
    except CancelledError:  # the job was cancelled before it started: nothing is stored
        return _failure(request, "the evaluation was cancelled")
    except SoftTimeLimitExceeded:
        return _failure(request, f"the evaluation ran past "
                                 f"{settings.KERNELHUB_EVAL_SOFT_LIMIT_S:g} s", "timeout")


def _screened(future, request: dict) -> dict:
    """The ScreenResult dict, or a failure without configurations (the search then fully
    evaluates the family's children, as when screening fails locally)."""
    try:
        return future.result().to_dict()
    except CancelledError:
        return _failure(request, "the screening was cancelled")
    except SoftTimeLimitExceeded:
        return _failure(request, f"the screening ran past "
                                 f"{settings.KERNELHUB_SCREEN_SOFT_LIMIT_S:g} s", "timeout")
    except Exception as exc:  # a bad problem, target or host: nothing was screened
        return _failure(request, f"the screening could not run: {type(exc).__name__}: {exc}")


def _failure(request: dict, message: str, status: str = "runtime_error") -> dict:
    return EvaluationResult(status=status, target=request["target"],
                            precision_policy=request.get("precision_policy", "strict"),
                            message=message).to_dict()


def _beat(job_id: int, task_id: str, stop: threading.Event, on_lost=None) -> None:
    """Beat while the evaluation runs; a job cancelled meanwhile (its session out of time)
    or handed to another delivery is no longer this run's: `on_lost` kills it."""
    from django.db import connection

    try:
        while not stop.wait(ledger.JOB_BEAT_S):
            if not ledger.job_beat(job_id, task_id) and on_lost is not None:
                on_lost()
                return
    except Exception:  # the watcher will see a stale beat and send the job again
        logger.exception("heartbeat of evaluation job %s failed", job_id)
    finally:
        connection.close()


@shared_task(name="kernelhub.run_session", acks_late=True, reject_on_worker_lost=True)
def run_session_task(session_id: int) -> None:
    runner.run_session(session_id)


_coverage_slot = threading.BoundedSemaphore(1)  # one sandboxed analysis at a time per process


@shared_task(name="kernelhub.problem_offline_coverage", acks_late=True)
def problem_coverage_task(problem_id: int) -> str:
    """Compute and store a problem's offline coverage (the analysis runs in the sandbox)."""
    with _coverage_slot:
        return problem_offline_coverage_compute(problem_id).offline_coverage_state
