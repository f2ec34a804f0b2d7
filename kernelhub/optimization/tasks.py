"""Celery tasks (thin): session loops and problem coverage on queue `search`, evaluations
on `gpu.<target>`."""

from __future__ import annotations

import logging
import threading

from celery import shared_task
from django.conf import settings
from django.db import close_old_connections, transaction

from search_engine.protocols import EvaluationRequest

logger = logging.getLogger(__name__)


@shared_task(name="kernelhub.evaluate_candidate", acks_late=True)
def evaluate_candidate_task(request: dict) -> dict:
    """Run one evaluation on this worker's GPU; returns `EvaluationResult.to_dict()`."""
    from kernelhub.optimization.executors import local_executor

    result = local_executor().submit(EvaluationRequest(**request)).result()
    return result.to_dict()


@shared_task(name="kernelhub.run_session", acks_late=True)
def run_session_task(session_id: int) -> None:
    from kernelhub.optimization.runner import run_session

    run_session(session_id)


# --- offline coverage of a problem: a Celery task, or a background thread here -------------------

@shared_task(name="kernelhub.problem_offline_coverage", acks_late=True)
def problem_coverage_task(problem_id: int) -> str:
    """Compute and store a problem's offline coverage (the analysis runs in the sandbox)."""
    from kernelhub.optimization.services import problem_offline_coverage_compute

    return problem_offline_coverage_compute(problem_id).offline_coverage_state


_coverage_slot = threading.BoundedSemaphore(1)  # one sandboxed analysis at a time here


def _coverage_in_thread(problem_id: int) -> None:
    from kernelhub.optimization.services import problem_offline_coverage_compute

    try:
        with _coverage_slot:
            problem_offline_coverage_compute(problem_id)
    except Exception:  # no caller to tell; the next page view asks again once it is stale
        logger.exception("offline coverage of problem %s crashed", problem_id)
    finally:
        close_old_connections()


def enqueue_problem_coverage(problem_id: int) -> None:
    """Compute the coverage in the background once the transaction that asked commits:
    on the `search` queue in the distributed mode, in a daemon thread in the embedded one."""

    def start() -> None:
        if settings.KERNELHUB_EXECUTOR == "celery":
            problem_coverage_task.apply_async(args=[problem_id], queue="search")
        else:
            threading.Thread(target=_coverage_in_thread, args=(problem_id,), daemon=True,
                             name=f"kernelhub-coverage-{problem_id}").start()

    transaction.on_commit(start, robust=True)  # a broker error must not fail the request
