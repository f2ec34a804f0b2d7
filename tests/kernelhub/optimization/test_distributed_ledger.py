"""The distributed mode's bookkeeping without workers: the evaluation ledger (one stored
result per evaluation, bounded retries, nothing blamed on the kernel), session leases and
the reaper, the executor's recovery rules, cancellation and the placement rule."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from kernelhub import placement
from kernelhub.optimization import executors, ledger, tasks
from kernelhub.optimization.models import (
    Candidate, EvaluationJob, SearchSession, SessionLease, WorkerPresence,
)
from kernelhub.optimization.runner import SessionRecorder
from kernelhub.optimization.session_state import session_waiting_for_worker
from kernelhub.optimization.services import session_cancel, session_create
from kernelhub.review.models import Review
from search_engine.protocols import EvaluationRequest

pytestmark = pytest.mark.django_db
Job = EvaluationJob.State


@pytest.fixture
def session(teams, hardware, library_problem):
    return session_create(user=teams["users"][("alpha", "engineer")], team=teams["alpha"],
                          problem=library_problem, hardware=hardware["h200"],
                          budget_evaluations=4)


@pytest.fixture
def sent(monkeypatch, settings):
    """Capture what would be published to the broker (and make the mode distributed)."""
    settings.KERNELHUB_EXECUTOR = "celery"
    published = []
    monkeypatch.setattr(tasks.evaluate_candidate_task, "apply_async",
                        lambda args, queue, task_id, expires: published.append(
                            (args[0], queue, task_id)))
    monkeypatch.setattr(executors, "broker_epoch", lambda: "epoch-1")
    return published


def request(source: str = "candidate") -> EvaluationRequest:
    return EvaluationRequest(problem_source="problem", candidate_source=source, target="h200")


def open_job(session=None, key: str = "k") -> EvaluationJob:
    job = ledger.job_open(key=key, queue="gpu.h200", request=executors.request_payload(request()),
                          session_id=session.pk if session else None)
    ledger.job_new_delivery(job)
    return job


def test_a_duplicate_delivery_is_stored_once_and_a_stale_one_never_runs():
    job = open_job()
    first = job.task_id
    assert ledger.job_claim(job.pk, first, "gpu0@a") == "run"
    assert ledger.job_store(job.pk, first, {"status": "correct"})
    assert not ledger.job_store(job.pk, first, {"status": "incorrect"})  # delivered twice
    assert ledger.job_claim(job.pk, first, "gpu1@b") == "skip"  # already decided
    job.refresh_from_db()
    assert job.result == {"status": "correct"} and job.attempts == 1
    other = open_job(key="k2")
    old = other.task_id
    ledger.job_new_delivery(other, "resent")
    assert ledger.job_claim(other.pk, old, "gpu0@a") == "skip"  # superseded delivery


def test_a_redelivery_waits_while_the_first_run_beats_and_takes_over_when_it_stopped():
    job = open_job()
    assert ledger.job_claim(job.pk, job.task_id, "gpu0@a") == "run"
    assert ledger.job_claim(job.pk, job.task_id, "gpu1@b") == "busy"
    EvaluationJob.objects.filter(pk=job.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=ledger.JOB_ALIVE_S + 1))
    assert ledger.job_claim(job.pk, job.task_id, "gpu1@b") == "run"
    job.refresh_from_db()
    assert job.attempts == 2 and job.worker == "gpu1@b"


def test_a_job_that_keeps_losing_its_worker_fails_with_the_reason_not_the_kernels(settings):
    settings.KERNELHUB_EVAL_MAX_ATTEMPTS = 2
    job = open_job()
    stale = timezone.now() - timedelta(seconds=60)
    for _ in range(2):
        assert ledger.job_claim(job.pk, job.task_id, "gpu0@a") == "run"
        EvaluationJob.objects.filter(pk=job.pk).update(heartbeat_at=stale)
    assert ledger.job_claim(job.pk, job.task_id, "gpu0@a") == "exhausted"
    job.refresh_from_db()
    assert job.state == Job.DONE and job.result["status"] == "runtime_error"
    assert "infrastructure" in job.result["message"] and "lost 2 times" in job.result["message"]
    assert job.result["diagnostics"]["infrastructure_failure"]


def test_the_executor_resends_lost_jobs_and_resolves_stored_ones(sent, settings, session):
    executor = executors.CeleryExecutor(session.pk)
    executor.shutdown()  # no watcher thread: the test drives `check()`
    lost, dropped, done = (executor.submit(request(s)) for s in ("lost", "dropped", "done"))
    assert [queue for _, queue, _ in sent] == ["gpu.h200"] * 3
    jobs = {j.request["candidate_source"]: j for j in EvaluationJob.objects.all()}
    # "lost": its worker stopped beating; "dropped": Redis restarted (a new run_id);
    # "done": a worker stored its result.
    assert ledger.job_claim(jobs["lost"].pk, jobs["lost"].task_id, "gpu0@a") == "run"
    EvaluationJob.objects.filter(pk=jobs["lost"].pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=settings.KERNELHUB_JOB_STALE_S + 1))
    EvaluationJob.objects.filter(pk=jobs["dropped"].pk).update(broker_epoch="epoch-0")
    assert ledger.job_claim(jobs["done"].pk, jobs["done"].task_id, "gpu0@a") == "run"
    ledger.job_store(jobs["done"].pk, jobs["done"].task_id,
                     {"status": "correct", "target": "h200", "reward": 1.0})
    sent.clear()
    assert executor.check()
    assert sorted(pk for pk, _, _ in sent) == sorted([jobs["lost"].pk, jobs["dropped"].pk])
    assert done.result(0).status == "correct" and not lost.done() and not dropped.done()
    reasons = [h["reason"] for j in EvaluationJob.objects.exclude(history=[]) for h in j.history]
    assert any("stopped beating" in r for r in reasons)
    assert any("broker restart" in r for r in reasons)
    # The same evaluation asked again (a rebuilt loop) is the stored one, not a new run.
    sent.clear()
    again = executor.submit(request("done"))
    assert again.result(0).status == "correct" and sent == []


def test_a_cancelled_future_cancels_its_job_and_revokes_the_delivery(sent, session, monkeypatch):
    revoked = []
    monkeypatch.setattr(executors, "revoke", revoked.extend)
    executor = executors.CeleryExecutor(session.pk)
    executor.shutdown()
    future = executor.submit(request())
    assert future.cancel()
    executor.check()
    job = EvaluationJob.objects.get()
    assert job.state == Job.CANCELLED and revoked == [job.task_id]
    assert ledger.job_claim(job.pk, job.task_id, "gpu0@a") == "skip"  # a later worker


def test_one_loop_per_session_and_the_reaper_relaunches_an_expired_lease(session, settings,
                                                                        monkeypatch):
    launched = []
    monkeypatch.setattr(placement.current(), "run", lambda task, pk, queue="search":
                        launched.append((task, pk)))
    assert ledger.lease_acquire(session.pk, "loop-a")
    assert not ledger.lease_acquire(session.pk, "loop-b")  # a redelivered run_session
    assert placement.session_loop_alive(session.pk)
    assert placement.sessions_reap() == []
    SessionLease.objects.filter(pk=session.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1))
    assert not ledger.lease_renew(session.pk, "loop-b")
    assert placement.sessions_reap() == [session.pk]
    assert placement.sessions_reap() == []  # reserved: relaunched once
    assert launched == [(placement.RUN_SESSION, session.pk)]
    assert ledger.lease_acquire(session.pk, "loop-b")  # the relaunched loop takes it
    assert not ledger.lease_renew(session.pk, "loop-a")  # and the old one learns it lost it


def test_cancel_revokes_queued_work_and_closes_a_session_whose_loop_is_gone(
        sent, session, teams, monkeypatch):
    revoked = []
    monkeypatch.setattr(executors, "revoke", revoked.extend)
    root = Candidate.objects.create(session=session, node_id="0", status="reference")
    best = Candidate.objects.create(session=session, node_id="1", parent=root, status="correct",
                                    reward=2.0, speedup_vs_eager=1.5, source="kernel")
    pending = Candidate.objects.create(session=session, node_id="2", parent=root,
                                       status="pending")
    executor = executors.CeleryExecutor(session.pk)
    executor.shutdown()
    executor.submit(request("queued"))
    session.status = SearchSession.Status.RUNNING
    session.save()
    session_cancel(session, teams["users"][("alpha", "engineer")])
    job = EvaluationJob.objects.get()
    assert job.state == Job.CANCELLED and revoked == [job.task_id]
    pending.refresh_from_db()
    assert pending.status == "cancelled"
    assert Review.objects.filter(candidate=best).exists()


def test_cancelled_nodes_are_not_counted_as_evaluated(session):
    Candidate.objects.create(session=session, node_id="0", status="reference")
    recorder = SessionRecorder(session)
    for node_id, status in ((1, "correct"), (2, "cancelled")):
        recorder.on_node_created({"id": node_id, "parent_id": 0, "depth": 1})
        recorder.on_node_evaluated({"id": node_id, "parent_id": 0, "status": status,
                                    "result": {}})
    session.refresh_from_db()
    assert session.evaluated_count == 1


def test_a_session_without_a_live_worker_says_it_waits_for_one(session, settings):
    settings.KERNELHUB_EXECUTOR = "celery"
    assert "waiting for a worker" in session_waiting_for_worker(session)
    now = timezone.now()
    WorkerPresence.objects.create(name="gpu0@node", queues="gpu.h200", target="h200",
                                  started_at=now, beat_at=now - timedelta(minutes=5))
    assert "waiting for a worker" in session_waiting_for_worker(session)  # a stale beat
    WorkerPresence.objects.filter(name="gpu0@node").update(beat_at=now)
    ledger.lease_acquire(session.pk, "search@node:1:loop")  # its loop runs
    assert session_waiting_for_worker(session) == ""
    settings.KERNELHUB_EXECUTOR = "local"
    WorkerPresence.objects.all().delete()
    settings.KERNELHUB_LOCAL_TARGETS = "interpreter,h200"
    assert session_waiting_for_worker(session) == ""  # evaluations run here
    settings.KERNELHUB_LOCAL_TARGETS = "interpreter"  # this server has no H200
    assert "this server cannot run" in session_waiting_for_worker(session)


def test_one_rule_decides_where_work_runs(settings):
    settings.KERNELHUB_EXECUTOR = "local"
    assert placement.mode() == "embedded" and placement.evaluations_run_here()
    assert isinstance(placement.evaluation_executor(7), executors.SharedExecutorHandle)
    settings.KERNELHUB_EXECUTOR = "celery"
    assert placement.mode() == "distributed" and not placement.evaluations_run_here()
    assert isinstance(placement.evaluation_executor(7), executors.CeleryExecutor)
    settings.KERNELHUB_EXECUTOR = "slurm"
    with pytest.raises(ValueError, match="KERNELHUB_EXECUTOR"):
        placement.current()


def test_no_module_of_the_bridge_imports_another_inside_a_function():
    """The import circle is gone: runner, services, tasks and executors import at the top."""
    import ast
    import inspect

    from kernelhub.optimization import runner, services

    ours = {"kernelhub.optimization.runner", "kernelhub.optimization.services",
            "kernelhub.optimization.tasks", "kernelhub.optimization.executors",
            "kernelhub.placement"}
    for module in (runner, services, tasks, executors, placement):
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.ImportFrom):
                        assert inner.module not in ours, (module.__name__, node.name,
                                                          inner.module)


@pytest.mark.django_db(transaction=True)
def test_writes_wait_out_a_database_that_is_briefly_away(monkeypatch):
    from django.db import OperationalError

    monkeypatch.setattr(ledger, "DB_RETRY_S", (0, 0))
    tries = []

    def flaky():
        tries.append(1)
        if len(tries) < 3:
            raise OperationalError("server closed the connection unexpectedly")
        return "stored"

    assert ledger.with_db_retry(flaky) == "stored" and len(tries) == 3
    tries.clear()
    monkeypatch.setattr(ledger, "DB_RETRY_S", (0,))
    with pytest.raises(OperationalError):
        ledger.with_db_retry(lambda: flaky() if len(tries) < 5 else None)


@pytest.mark.django_db(transaction=True)
def test_a_worker_kills_an_evaluation_whose_job_was_cancelled(monkeypatch):
    """A session out of time cancels its jobs; the worker running one sees it at its next
    heartbeat and kills the evaluation (its sandboxes) instead of finishing it."""
    import threading

    monkeypatch.setattr(ledger, "JOB_BEAT_S", 0.05)
    job = open_job()
    assert ledger.job_claim(job.pk, job.task_id, "gpu0@a") == "run"
    killed, stop = threading.Event(), threading.Event()
    beat = threading.Thread(target=tasks._beat, args=(job.pk, job.task_id, stop, killed.set))
    beat.start()
    try:
        assert not killed.wait(0.3), "a running job was killed"
        ledger.job_cancel(job.pk)
        assert killed.wait(5), "the cancelled job's evaluation was not killed"
    finally:
        stop.set()
        beat.join(5)
