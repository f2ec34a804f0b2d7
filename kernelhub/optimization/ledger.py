"""Writes of the distributed mode's bookkeeping: the evaluation ledger, session leases and
worker presence. Every write is a conditional update, so a duplicate delivery, a second loop
or a late worker changes nothing that another already decided.

Imports only models and settings: placement, executors, the runner and the tasks build on it.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from datetime import timedelta
from typing import Callable, TypeVar

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from kernelhub.optimization.models import (
    EvaluationJob, SearchSession, SessionLease, WorkerPresence,
)
from kernelhub.queues import is_gpu_queue, target_of

DB_RETRY_S = (0.5, 1, 2, 4, 8, 15, 30)  # waits between tries of a write while the database is away
JOB_BEAT_S = 1.0  # how often a running evaluation renews its row
JOB_ALIVE_S = 4 * JOB_BEAT_S  # a younger heartbeat: that delivery still runs
RELAUNCH_WAIT_S = 120.0  # a relaunched session's message gets this long to start a loop
Job = EvaluationJob.State
T = TypeVar("T")
logger = logging.getLogger(__name__)


def with_db_retry(write: Callable[[], T]) -> T:
    """Run `write` (an atomic unit) again while the database is briefly unavailable
    (not inside a caller's transaction: that one has to start over as a whole)."""
    for wait in DB_RETRY_S:
        try:
            return write()
        except (OperationalError, InterfaceError) as exc:
            if connection.in_atomic_block:
                raise
            logger.warning("database unavailable (%s); retrying in %g s", exc, wait)
            connection.close()
            time.sleep(wait)
    return write()


# -- the evaluation ledger -----------------------------------------------------------------

def job_open(*, key: str, queue: str, request: dict, session_id: int | None) -> EvaluationJob:
    """The ledger row for `key`: the stored one (done, or still on its way), or a new one.

    A cancelled row is reopened; its earlier deliveries stay invalid (new task id)."""
    job, created = EvaluationJob.objects.get_or_create(
        key=key, defaults={"queue": queue, "request": request, "session_id": session_id})
    if not created and job.state == Job.CANCELLED:
        EvaluationJob.objects.filter(pk=job.pk, state=Job.CANCELLED).update(
            state=Job.QUEUED, task_id="", broker_epoch="", result=None)
        job.refresh_from_db()
    return job


def job_new_delivery(job: EvaluationJob, reason: str = "") -> str | None:
    """Give the job a new task id (the only delivery allowed to run it); None when it was
    decided meanwhile (done or cancelled)."""
    task_id = str(uuid.uuid4())
    history = list(job.history or [])
    if reason:
        history.append({"at": timezone.now().isoformat(), "reason": reason[:300]})
    sent = EvaluationJob.objects.filter(
        pk=job.pk, task_id=job.task_id, state__in=(Job.QUEUED, Job.RUNNING)).update(
        task_id=task_id, state=Job.QUEUED, queued_at=timezone.now(), broker_epoch="",
        worker="", heartbeat_at=None, history=history[-20:])
    if not sent:
        return None
    job.task_id, job.state, job.history = task_id, Job.QUEUED, history[-20:]
    return task_id


def job_mark_sent(pk: int, task_id: str, epoch: str) -> None:
    EvaluationJob.objects.filter(pk=pk, task_id=task_id).update(broker_epoch=epoch)


def job_claim(pk: int, task_id: str, worker: str) -> str:
    """A delivery asks to run job `pk`: "run", "skip" (stale, decided, or running elsewhere
    right now: "busy"), or "exhausted" (too many starts; the job is failed here)."""
    with transaction.atomic():
        job = EvaluationJob.objects.select_for_update().filter(pk=pk).first()
        if job is None or job.task_id != task_id or job.state in (Job.DONE, Job.CANCELLED):
            return "skip"
        now = timezone.now()
        if (job.state == Job.RUNNING and job.heartbeat_at is not None
                and now - job.heartbeat_at < timedelta(seconds=JOB_ALIVE_S)):
            return "busy"
        if job.attempts >= settings.KERNELHUB_EVAL_MAX_ATTEMPTS:
            _job_fail(job, lost_reason(job))
            return "exhausted"
        job.state, job.worker, job.attempts = Job.RUNNING, worker[:200], job.attempts + 1
        job.started_at = job.heartbeat_at = now
        job.save(update_fields=["state", "worker", "attempts", "started_at", "heartbeat_at"])
    return "run"


def job_beat(pk: int, task_id: str) -> bool:
    return bool(EvaluationJob.objects.filter(pk=pk, task_id=task_id, state=Job.RUNNING)
                .update(heartbeat_at=timezone.now()))


def job_store(pk: int, task_id: str, result: dict) -> bool:
    """Store the result of the current delivery, once; False when it was not (a duplicate)."""
    return bool(EvaluationJob.objects.filter(
        pk=pk, task_id=task_id, state__in=(Job.QUEUED, Job.RUNNING)).update(
        state=Job.DONE, result=result, finished_at=timezone.now()))


def job_fail(job: EvaluationJob, reason: str) -> bool:
    """Decide a job the infrastructure could not run, with the reason (never the kernel's)."""
    with transaction.atomic():
        job = EvaluationJob.objects.select_for_update().get(pk=job.pk)
        return _job_fail(job, reason)


def _job_fail(job: EvaluationJob, reason: str) -> bool:
    if job.state in (Job.DONE, Job.CANCELLED):
        return False
    request = job.request or {}
    job.state, job.finished_at = Job.DONE, timezone.now()
    job.result = {"status": "runtime_error", "target": request.get("target", ""),
                  "precision_policy": request.get("precision_policy", "strict"),
                  "message": f"not evaluated (infrastructure): {reason}",
                  "diagnostics": {"infrastructure_failure": reason}}
    job.save(update_fields=["state", "finished_at", "result"])
    return True


def lost_reason(job: EvaluationJob) -> str:
    return (f"the worker running it was lost {job.attempts} times "
            f"(last: {job.worker or 'unknown'}); it was not retried again")


def job_cancel(pk: int) -> str:
    """Cancel a job not yet decided; returns the task id to revoke ("" if none)."""
    job = EvaluationJob.objects.filter(pk=pk).values("task_id", "state").first()
    if job is None or job["state"] in (Job.DONE, Job.CANCELLED):
        return ""
    EvaluationJob.objects.filter(pk=pk, state__in=(Job.QUEUED, Job.RUNNING)).update(
        state=Job.CANCELLED, finished_at=timezone.now())
    return job["task_id"]


def session_jobs_cancel(session_id: int) -> list[str]:
    """Cancel a session's undecided evaluations; the task ids to revoke."""
    jobs = EvaluationJob.objects.filter(session_id=session_id,
                                        state__in=(Job.QUEUED, Job.RUNNING))
    task_ids = [t for t in jobs.values_list("task_id", flat=True) if t]
    jobs.update(state=Job.CANCELLED, finished_at=timezone.now())
    return task_ids


# -- session leases ------------------------------------------------------------------------

def loop_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def lease_acquire(session_id: int, owner: str) -> bool:
    """Take the session's lease: free, expired, or only reserved by a launch (owner "")."""
    now = timezone.now()
    expires = now + timedelta(seconds=settings.KERNELHUB_SESSION_LEASE_S)
    with transaction.atomic():
        SessionLease.objects.get_or_create(
            session_id=session_id, defaults={"owner": "", "acquired_at": now, "expires_at": now})
        return bool(SessionLease.objects.filter(session_id=session_id).filter(
            Q(owner="") | Q(expires_at__lt=now) | Q(owner=owner)).update(
            owner=owner, acquired_at=now, expires_at=expires))


def lease_renew(session_id: int, owner: str) -> bool:
    expires = timezone.now() + timedelta(seconds=settings.KERNELHUB_SESSION_LEASE_S)
    return bool(SessionLease.objects.filter(session_id=session_id, owner=owner).update(
        expires_at=expires))


def lease_release(session_id: int, owner: str) -> None:
    SessionLease.objects.filter(session_id=session_id, owner=owner).update(
        expires_at=timezone.now())


def lease_reserve(session_id: int) -> None:
    """A launch is on its way: no reaper relaunches it for RELAUNCH_WAIT_S."""
    now = timezone.now()
    with transaction.atomic():
        SessionLease.objects.get_or_create(
            session_id=session_id, defaults={"owner": "", "acquired_at": now, "expires_at": now})
        SessionLease.objects.filter(session_id=session_id).filter(
            Q(owner="") | Q(expires_at__lt=now)).update(
            owner="", acquired_at=now, expires_at=now + timedelta(seconds=RELAUNCH_WAIT_S))


def lease_held(session_id: int) -> bool:
    return SessionLease.objects.filter(session_id=session_id, expires_at__gte=timezone.now()
                                       ).exclude(owner="").exists()


def sessions_to_relaunch() -> list[int]:
    """Active sessions whose loop is gone (lease expired, or never taken after a launch);
    each is reserved again, so one reaper pass relaunches it once."""
    now = timezone.now()
    orphaned = SearchSession.objects.filter(status__in=SearchSession.ACTIVE_STATUSES).filter(
        Q(lease__expires_at__lt=now) | Q(lease__isnull=True,
                                          created_at__lt=now - timedelta(seconds=RELAUNCH_WAIT_S)))
    relaunch = []
    for session_id in orphaned.values_list("pk", flat=True):
        with transaction.atomic():
            SessionLease.objects.get_or_create(session_id=session_id, defaults={
                "owner": "", "acquired_at": now, "expires_at": now})
            taken = SessionLease.objects.filter(session_id=session_id, expires_at__lt=now).update(
                owner="", acquired_at=now, relaunches=F("relaunches") + 1,
                expires_at=now + timedelta(seconds=RELAUNCH_WAIT_S))
        if taken:
            relaunch.append(session_id)
    return relaunch


# -- worker presence -----------------------------------------------------------------------

def presence_beat(*, name: str, queues: list[str], gpu_name: str, current_task_ids: list[str],
                  started_at) -> None:
    target = next((target_of(q) for q in queues if is_gpu_queue(q)), "")
    job = (EvaluationJob.objects.filter(task_id__in=current_task_ids).first()
           if current_task_ids else None)
    WorkerPresence.objects.update_or_create(name=name[:200], defaults={
        "queues": ",".join(queues)[:500], "target": target, "gpu_name": gpu_name[:200],
        "busy": bool(current_task_ids), "current_job": job,
        "current_candidate": job.key if job else "", "pid": os.getpid(),
        "started_at": started_at, "beat_at": timezone.now()})


def presence_gone(name: str) -> None:
    WorkerPresence.objects.filter(name=name).delete()
