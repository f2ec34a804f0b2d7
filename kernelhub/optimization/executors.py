"""The two evaluation runners behind `kernelhub.placement` (which picks one):

- embedded default: `search_engine.evaluation.executor.LocalExecutor` (sandboxed
  subprocesses on this host, one timing at a time per GPU), shared by the process;
- distributed mode: `CeleryExecutor`, which queues each evaluation on `gpu.<target>` and
  follows it in the `EvaluationJob` ledger until a result is stored there; a screening of a
  family of configurations (issue 29) is one more job of that ledger and queue, run by
  `kernelhub.screen_family` in one worker.

Both take `submit(request, key=None)`: `key` names the evaluation, so asking again for the
same one (a rebuilt loop, a retried request) gets the stored or running one, not a new run.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from concurrent.futures import Future
from dataclasses import asdict
from datetime import timedelta
from typing import Callable

from django.conf import settings
from django.db import close_old_connections, connection
from django.utils import timezone

from kernelhub.celery import app, task_named
from kernelhub.optimization import ledger
from kernelhub.optimization.models import EvaluationJob
from kernelhub.queues import gpu_queue
from search_engine.evaluation.result import EvaluationResult
from search_engine.protocols import EvaluationRequest, ScreenRequest

logger = logging.getLogger(__name__)
EVALUATE_TASK = "kernelhub.evaluate_candidate"
SCREEN_TASK = "kernelhub.screen_family"
WATCH_POLL_S = 0.5
Job = EvaluationJob.State


def request_payload(request: EvaluationRequest | ScreenRequest) -> dict:
    payload = asdict(request)
    payload["options"] = {k: v for k, v in request.options.items() if k != "config"}
    return payload


def is_screening(job: EvaluationJob) -> bool:
    """A screening job carries a family (`sources`), an evaluation one candidate."""
    return "sources" in (job.request or {})


def screen_job_key(session_id: int | None, request: ScreenRequest) -> str:
    """Named by the family it screens, like `session_job_key` (a rebuilt loop gets it back)."""
    digest = hashlib.sha256("\0".join((
        request.problem_source, *request.sources, request.target,
        request.precision_policy)).encode()).hexdigest()[:40]
    return f"screen:{session_id}:{digest}"


class ScreeningFailed(RuntimeError):
    """The screening could not run (a bad problem or host, or the infrastructure lost it):
    the search then fully evaluates the family's children, as without screening."""


def screen_result(stored: dict) -> ScreenResult:
    """A screening job's stored result; one without configurations is its failure."""
    if "configurations" not in stored:
        raise ScreeningFailed(stored.get("message") or "the screening failed")
    from search_engine.evaluation.screening import ScreenResult  # sandbox code: on use

    return ScreenResult.from_dict(stored)


def session_job_key(session_id: int | None, request: EvaluationRequest) -> str:
    """A session's evaluation is named by what it evaluates: a loop rebuilt from stored
    nodes asks for the same key and gets the stored result."""
    digest = hashlib.sha256("\0".join((
        request.problem_source, request.candidate_source, request.target,
        request.precision_policy)).encode()).hexdigest()[:40]
    return f"session:{session_id}:{digest}"


_epoch_client = None


def broker_epoch() -> str:
    """The broker's identity (Redis run_id): it changes when Redis restarts, which drops the
    messages it held. "" when it does not answer; "local" for a non-Redis broker."""
    global _epoch_client
    url = app.conf.broker_url or ""
    if not url.startswith(("redis://", "rediss://")):
        return "local"
    try:
        import redis

        if _epoch_client is None or _epoch_client[0] != url:
            _epoch_client = (url, redis.Redis.from_url(url, socket_timeout=1,
                                                       socket_connect_timeout=1))
        return str(_epoch_client[1].info("server")["run_id"])
    except Exception:
        return ""


def send_evaluation(job: EvaluationJob, reason: str = "") -> Exception | None:
    """Give `job` a new delivery and publish it. A broker that does not answer leaves it
    unsent (the watcher sends it again once the broker is back); returns that error."""
    task_id = ledger.job_new_delivery(job, reason)
    if task_id is None:
        return None
    epoch = broker_epoch()
    try:
        task_named(SCREEN_TASK if is_screening(job) else EVALUATE_TASK).apply_async(
            args=[job.pk], queue=job.queue, task_id=task_id,
            expires=settings.KERNELHUB_EVAL_QUEUE_EXPIRES_S)
    except Exception as exc:
        logger.warning("could not queue evaluation job %s (%s); will retry", job.pk, exc)
        return exc
    ledger.job_mark_sent(job.pk, task_id, epoch)
    return None


def job_recover(job: EvaluationJob, epoch: str) -> None:
    """Send again, or fail with the reason, a job the infrastructure lost: its worker stopped
    beating, a broker restart dropped its message, or no worker took it before it expired."""
    now = timezone.now()
    if job.state == Job.RUNNING and (job.heartbeat_at is None or now - job.heartbeat_at
                                     > timedelta(seconds=settings.KERNELHUB_JOB_STALE_S)):
        if job.attempts >= settings.KERNELHUB_EVAL_MAX_ATTEMPTS:
            ledger.job_fail(job, ledger.lost_reason(job))
        else:
            send_evaluation(job, f"worker {job.worker or '?'} stopped beating")
    elif job.state == Job.QUEUED and epoch and job.broker_epoch != epoch:
        send_evaluation(job, "not sent, or dropped by a broker restart")
    elif (job.state == Job.QUEUED and job.queued_at is not None and now - job.queued_at
          > timedelta(seconds=settings.KERNELHUB_EVAL_QUEUE_EXPIRES_S)):
        ledger.job_fail(job, f"no worker of {job.queue} took it within "
                             f"{settings.KERNELHUB_EVAL_QUEUE_EXPIRES_S:g} s")


def revoke(task_ids: list[str]) -> None:
    """Tell live workers to drop these deliveries (the ledger already refuses them). An
    empty id (a job never sent, or already cancelled through its record) has no delivery
    to drop: Celery would only fail to mark it revoked."""
    task_ids = [task_id for task_id in task_ids if task_id]
    if not task_ids:
        return
    try:
        app.control.revoke(task_ids)
    except Exception as exc:  # the ledger is what guarantees it; this only saves a start
        logger.warning("could not revoke %d tasks: %s", len(task_ids), exc)


class CeleryExecutor:
    """Evaluations on `gpu.<target>` queues, followed in the ledger by one watcher thread.

    A stored result resolves its future. A job whose worker stopped beating, or whose message
    a broker restart dropped, is sent again (at most KERNELHUB_EVAL_MAX_ATTEMPTS starts), and
    what the infrastructure could not run fails with that reason, never as the kernel's."""

    def __init__(self, session_id: int | None = None, retry_unsent: bool = True):
        self.session_id = session_id
        self.retry_unsent = retry_unsent  # False: a broker down at submit raises instead
        self._futures: dict[int, Future] = {}
        self._decoders: dict[int, Callable[[dict], object]] = {}  # stored result -> value
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None

    def submit(self, request: EvaluationRequest, key: str | None = None) -> Future:
        return self._open(key or session_job_key(self.session_id, request), request,
                          EvaluationResult.from_dict)

    def screen(self, request: ScreenRequest, key: str | None = None) -> Future:
        """Screen a family on one worker of `gpu.<target>`: a future of its `ScreenResult`
        (or of `ScreeningFailed`); cancelling the future cancels and revokes the job."""
        return self._open(key or screen_job_key(self.session_id, request), request,
                          screen_result)

    def _open(self, key: str, request, decode: Callable[[dict], object]) -> Future:
        job = ledger.job_open(key=key, queue=gpu_queue(request.target),
                              request=request_payload(request), session_id=self.session_id)
        future: Future = Future()
        if job.state == Job.DONE:
            _resolve(future, decode, job.result)
            return future
        if not job.task_id:
            error = send_evaluation(job)
            if error is not None and not self.retry_unsent:
                ledger.job_cancel(job.pk)
                raise error
        with self._lock:
            self._futures[job.pk] = future
            self._decoders[job.pk] = decode
        self._start_watcher()
        return future

    def shutdown(self) -> None:
        self._stop.set()

    # -- the watcher ------------------------------------------------------------------------
    def _start_watcher(self) -> None:
        with self._lock:
            if self._stop.is_set():
                return
            if self._watcher is None or not self._watcher.is_alive():
                self._watcher = threading.Thread(target=self._watch, daemon=True,
                                                 name=f"kernelhub-jobs-{self.session_id}")
                self._watcher.start()

    def _watch(self) -> None:
        """Until no job is left in flight (a later submit starts a new watcher)."""
        failing = False
        try:
            while not self._stop.wait(WATCH_POLL_S):
                try:
                    close_old_connections()
                    if not self.check():
                        return
                    failing = False
                except Exception:  # the database away for a moment: try again next tick
                    if not failing:
                        logger.exception("evaluation watcher tick failed; retrying")
                    failing = True
                    close_old_connections()
        finally:
            connection.close()

    def check(self) -> bool:
        """One pass over the jobs in flight (the watcher's tick; tests call it directly);
        whether any is left."""
        with self._lock:
            futures = dict(self._futures)
        if not futures:
            return False
        epoch = broker_epoch()
        jobs = {job.pk: job for job in EvaluationJob.objects.filter(pk__in=futures)}
        for pk in set(futures) - set(jobs):  # its session was deleted
            futures[pk].set_exception(LookupError(f"evaluation job {pk} no longer exists"))
            self._forget(pk)
        for job in jobs.values():
            future = futures[job.pk]
            if future.cancelled():
                revoke([ledger.job_cancel(job.pk)])
                self._forget(job.pk)
            elif job.state == Job.DONE:
                _resolve(future, self._decoders.get(job.pk, EvaluationResult.from_dict),
                         job.result)
                self._forget(job.pk)
            elif job.state == Job.CANCELLED:
                future.cancel()
                self._forget(job.pk)
            else:
                job_recover(job, epoch)
        with self._lock:
            return bool(self._futures)

    def _forget(self, pk: int) -> None:
        with self._lock:
            self._futures.pop(pk, None)
            self._decoders.pop(pk, None)


def _resolve(future: Future, decode: Callable[[dict], object], stored: dict) -> None:
    try:
        future.set_result(decode(stored))
    except Exception as exc:  # a failed screening: the caller's future says why
        future.set_exception(exc)


_local_executor = None


def local_executor():
    """One LocalExecutor per process, shared by sessions (it caches references)."""
    global _local_executor
    if _local_executor is None:
        from search_engine.evaluation.executor import LocalExecutor

        _local_executor = LocalExecutor()
    return _local_executor


class SharedExecutorHandle:
    """The process's LocalExecutor for one user: `shutdown()` leaves the shared pool running;
    `key` is accepted for the common interface (a local evaluation dies with its process)."""

    def __init__(self, executor):
        self._executor = executor

    def submit(self, request: EvaluationRequest, key: str | None = None):
        return self._executor.submit(request)

    def screen(self, request):
        """Screen a family of configurations (issue 29) in the shared pool's sandboxes."""
        return self._executor.screen(request)

    def cancel(self, future) -> None:
        """Kill one of this user's evaluations in flight (a session out of time)."""
        self._executor.cancel(future)

    def shutdown(self) -> None:
        pass
