"""Celery tasks (thin): session loops on queue `search`, evaluations on `gpu.<target>`."""

from __future__ import annotations

from celery import shared_task

from search_engine.protocols import EvaluationRequest


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
