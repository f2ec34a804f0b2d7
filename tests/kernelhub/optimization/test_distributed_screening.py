"""Issue 29 in distributed mode: a family's screening is one job of the ledger on the
target's GPU queue (`kernelhub.screen_family`), resolved as a `ScreenResult`, cancelled and
revoked like an evaluation; and a session with screening runs on real Celery workers."""

from __future__ import annotations

import time

import pytest

from kernelhub.optimization import executors, ledger, tasks
from kernelhub.optimization.models import Candidate, EvaluationJob, SearchSession
from kernelhub.optimization.services import session_cancel, session_create, session_start
from search_engine.evaluation.screening import ScreenResult
from search_engine.protocols import ScreenRequest

from .test_distributed import celery_workers, distributed_settings, postgres_db  # noqa: F401

# one xdist worker for every test on the shared Redis (its Celery workers answer every test)
pytestmark = pytest.mark.xdist_group("shared-redis")

Job = EvaluationJob.State


@pytest.fixture
def session(teams, hardware, library_problem):
    return session_create(user=teams["users"][("alpha", "engineer")], team=teams["alpha"],
                          problem=library_problem, hardware=hardware["h200"],
                          budget_evaluations=4)


@pytest.fixture
def sent(monkeypatch, settings):
    """What would be published, by task (and the mode made distributed)."""
    settings.KERNELHUB_EXECUTOR = "celery"
    published = []
    for task in (tasks.evaluate_candidate_task, tasks.screen_family_task):
        monkeypatch.setattr(task, "apply_async", lambda args, queue, task_id, expires, name=(
            task.name): published.append((name, args[0], queue)))
    monkeypatch.setattr(executors, "broker_epoch", lambda: "epoch-1")
    return published


def family(*sources: str) -> ScreenRequest:
    return ScreenRequest(problem_source="problem", sources=list(sources), target="h200")


SCREENED = ScreenResult.from_dict({
    "target": "h200", "duration_s": 1.5, "sandboxes": 1,
    "configurations": [{"index": 0, "passed": True, "reason": "passed the spot-check",
                        "median_ms": 0.02, "samples": 30, "method": "cuda_events"},
                       {"index": 1, "passed": False, "reason": "incorrect: trial 1"}]})


@pytest.mark.django_db
def test_a_screening_is_a_gpu_job_resolved_as_a_screen_result(sent, session):
    executor = executors.CeleryExecutor(session.pk)
    executor.shutdown()  # the test drives `check()`
    future = executor.screen(family("a", "b"))
    job = EvaluationJob.objects.get()
    assert sent == [("kernelhub.screen_family", job.pk, "gpu.h200")]
    assert job.request["sources"] == ["a", "b"] and job.session_id == session.pk
    assert ledger.job_claim(job.pk, job.task_id, "gpu0@a") == "run"
    ledger.job_store(job.pk, job.task_id, SCREENED.to_dict())
    executor.check()
    result = future.result(0)
    assert result.to_dict() == SCREENED.to_dict()
    assert [c.index for c in result.ranked()] == [0]
    # the same family asked again (a rebuilt loop) is the stored screening, not a new run
    sent.clear()
    assert executor.screen(family("a", "b")).result(0).to_dict() == SCREENED.to_dict()
    assert sent == []


@pytest.mark.django_db
def test_a_screening_the_infrastructure_lost_fails_its_future_with_the_reason(sent, session,
                                                                              settings):
    executor = executors.CeleryExecutor(session.pk)
    executor.shutdown()
    future = executor.screen(family("a"))
    job = EvaluationJob.objects.get()
    settings.KERNELHUB_EVAL_MAX_ATTEMPTS = 1
    assert ledger.job_claim(job.pk, job.task_id, "gpu0@a") == "run"
    EvaluationJob.objects.filter(pk=job.pk).update(heartbeat_at=None)
    executor.check()  # the lost job is failed with the reason...
    executor.check()  # ...which the next pass hands to the future
    with pytest.raises(executors.ScreeningFailed, match="worker running it was lost"):
        future.result(0)


@pytest.mark.django_db
def test_a_cancelled_screening_is_cancelled_revoked_and_skipped(sent, session, monkeypatch):
    revoked = []
    monkeypatch.setattr(executors, "revoke", revoked.extend)
    executor = executors.CeleryExecutor(session.pk)
    executor.shutdown()
    future = executor.screen(family("a", "b"))
    assert future.cancel()  # the search stopped waiting (its time ran out)
    executor.check()
    job = EvaluationJob.objects.get()
    assert job.state == Job.CANCELLED and revoked == [job.task_id]
    assert ledger.job_claim(job.pk, job.task_id, "gpu0@a") == "skip"  # a later worker
    # a cancelled session cancels its queued screening too
    other = executor.screen(family("c"))
    session_cancel(session, session.created_by)
    assert EvaluationJob.objects.get(request__sources=["c"]).state == Job.CANCELLED
    executor.check()
    assert other.cancelled()


@pytest.mark.django_db
def test_a_worker_stores_why_a_screening_could_not_run(sent, session):
    """A problem that cannot run is stored as the screening's failure (no configurations),
    so the search fully evaluates the family instead of waiting."""
    executor = executors.CeleryExecutor(session.pk)
    executor.shutdown()
    future = executor.screen(ScreenRequest(problem_source="this is not python (",
                                           sources=["x"], target="interpreter"))
    job = EvaluationJob.objects.get()
    assert job.queue == "gpu.interpreter"
    outcome = tasks.screen_family_task.apply(args=[job.pk], task_id=job.task_id).get()
    assert outcome == "stored"
    executor.check()
    with pytest.raises(executors.ScreeningFailed, match="the screening could not run"):
        future.result(0)


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.redis
def test_celery_workers_screen_a_family_and_evaluate_only_its_finalists(
    teams, hardware, library_problem, celery_workers, distributed_settings  # noqa: F811
):
    session = session_create(
        user=teams["users"][("alpha", "engineer")], team=teams["alpha"], problem=library_problem,
        hardware=hardware["interpreter"], budget_evaluations=2, seed=3,
        config={"screen": 2, "screen_finalists": 1},
    )
    session_start(session)
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline:
        session.refresh_from_db()
        if not session.is_active:
            break
        time.sleep(1)
    logs = "\n".join(path.read_text()[-4000:] for _, path in celery_workers)
    assert session.status == SearchSession.Status.FINISHED, session.status_message + logs
    screens = EvaluationJob.objects.filter(session=session, request__has_key="sources")
    assert screens.exists() and "kernelhub.screen_family" in logs, logs
    for job in screens:
        assert job.state == Job.DONE and job.queue == "gpu.interpreter"
        assert len(job.result["configurations"]) == len(job.request["sources"]), job.result
    assert session.screened_count >= 2
    screened = Candidate.objects.filter(session=session, status="screened")
    assert screened.exists(), list(Candidate.objects.filter(session=session).values_list(
        "status", "message"))
    assert session.best_candidate is None or session.best_candidate.status == "correct"
