"""Where work runs: the one module that knows, by one rule read from settings.

`KERNELHUB_EXECUTOR` = "local" (the embedded default: daemon threads and sandboxed
subprocesses of this process) or "celery" (the distributed mode: queue `search` for session
loops, problem coverage and document ingestion; `gpu.<target>` for evaluations).

`LocalPlacement` and `CeleryPlacement` are two runners of one interface; everything else
calls the functions at the bottom (`session_launch`, `evaluation_executor`, ...) and never
asks which mode it is in. Jobs are the Celery tasks, addressed by name: the local runner
calls the same task body in a thread, so both modes run one code path.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable

from django.conf import settings
from django.db import connection, transaction

from kernelhub.celery import task_named
from kernelhub.optimization import executors, ledger
from kernelhub.optimization.models import EvaluationJob
from kernelhub.queues import SEARCH_QUEUE

logger = logging.getLogger(__name__)
RUN_SESSION, INGEST_DOCUMENT, PROBLEM_COVERAGE = (
    "kernelhub.run_session", "knowledge.ingest_document", "kernelhub.problem_offline_coverage")


class LocalPlacement:
    """The embedded default: threads of this process; evaluations as local subprocesses."""

    mode = "embedded"
    evaluations_run_here = True

    def __init__(self):
        self._threads: dict[tuple[str, int], threading.Thread] = {}
        self._lock = threading.Lock()

    def run(self, task: str, object_id: int, queue: str = SEARCH_QUEUE) -> None:
        with self._lock:
            thread = self._threads.get((task, object_id))
            if thread is not None and thread.is_alive():
                return  # already running here
            thread = threading.Thread(target=_run_in_thread, args=(task_named(task), object_id),
                                      daemon=True, name=f"kernelhub-{task}-{object_id}")
            self._threads[(task, object_id)] = thread
            thread.start()

    def running(self, task: str, object_id: int) -> bool:
        thread = self._threads.get((task, object_id))
        return thread is not None and thread.is_alive()

    def join(self, task: str, object_id: int, timeout_s: float) -> bool:
        thread = self._threads.get((task, object_id))
        if thread is not None:
            thread.join(timeout_s)
        return thread is None or not thread.is_alive()

    def evaluation_executor(self, session_id: int | None = None):
        return executors.SharedExecutorHandle(executors.local_executor())

    def revoke(self, task_ids: list[str]) -> None:
        pass  # local evaluations are cancelled through their futures


class CeleryPlacement:
    """The distributed mode: Celery on Redis; the database ledger follows every job."""

    mode = "distributed"
    evaluations_run_here = False

    def run(self, task: str, object_id: int, queue: str = SEARCH_QUEUE) -> None:
        task_named(task).apply_async(args=[object_id], queue=queue)

    def running(self, task: str, object_id: int) -> bool:
        return False  # nothing runs in this process; leases say what runs elsewhere

    def join(self, task: str, object_id: int, timeout_s: float) -> bool:
        return True

    def __init__(self):
        self._shared = None

    def evaluation_executor(self, session_id: int | None = None):
        if session_id is not None:
            return executors.CeleryExecutor(session_id)
        if self._shared is None:  # the reward service's: one watcher for the process
            self._shared = executors.CeleryExecutor(retry_unsent=False)
        return self._shared

    def revoke(self, task_ids: list[str]) -> None:
        executors.revoke(task_ids)


def _run_in_thread(task: Callable, object_id: int) -> None:
    try:
        task(object_id)
    except Exception:  # the thread has no caller to tell; the task records its failures
        logger.exception("background %s(%s) crashed", getattr(task, "name", task), object_id)
    finally:
        connection.close()


_placements = {"local": LocalPlacement(), "celery": CeleryPlacement()}


def current() -> LocalPlacement | CeleryPlacement:
    """The placement the settings name: the one rule."""
    try:
        return _placements[settings.KERNELHUB_EXECUTOR]
    except KeyError:
        raise ValueError(f"KERNELHUB_EXECUTOR must be 'local' or 'celery', "
                         f"not {settings.KERNELHUB_EXECUTOR!r}") from None


def mode() -> str:
    """"embedded" or "distributed" (for pages that describe the workers)."""
    return current().mode


def evaluations_run_here() -> bool:
    return current().evaluations_run_here


_detected_target: list[str] = []  # this host's GPU target, probed once per process
_detect_lock = threading.Lock()


def local_targets() -> list[str]:
    """The hardware targets this process can evaluate on (the embedded default's only
    worker): the interpreter, and the target of this host's GPU when it has one.
    `KERNELHUB_LOCAL_TARGETS` (comma separated) overrides the probe."""
    if settings.KERNELHUB_LOCAL_TARGETS:
        return [t.strip() for t in settings.KERNELHUB_LOCAL_TARGETS.split(",") if t.strip()]
    with _detect_lock:
        if not _detected_target:
            from search_engine.hardware import detect_local_target

            _detected_target.append(detect_local_target().name)
    return sorted({"interpreter", _detected_target[0]})


def local_target_served(target: str) -> bool:
    """Whether evaluations of `target` can run here (a GPU target needs that GPU: anything
    else would fail every candidate for want of a device, which is no fault of the kernel)."""
    return target in local_targets()


# -- the work, by kind ---------------------------------------------------------------------

def session_launch(session_id: int) -> None:
    """Start the session's loop (a thread here, or the `search` queue). Reserves its lease,
    so no reaper launches it again meanwhile; the loop that takes the lease runs it."""
    ledger.lease_reserve(session_id)
    current().run(RUN_SESSION, session_id)


def session_loop_alive(session_id: int) -> bool:
    return current().running(RUN_SESSION, session_id) or ledger.lease_held(session_id)


def session_wait(session_id: int, timeout_s: float) -> bool:
    """Join the session's thread (tests, CLI); True when it ended in time."""
    return current().join(RUN_SESSION, session_id, timeout_s)


def session_cancel_work(session_id: int) -> None:
    """Cancel the session's queued and running evaluations in the ledger and revoke their
    deliveries, so no worker (one started later included) runs them."""
    current().revoke(ledger.session_jobs_cancel(session_id))


def sessions_reap() -> list[int]:
    """Relaunch the active sessions whose loop is gone (its lease expired); their ids."""
    relaunched = ledger.sessions_to_relaunch()
    for session_id in relaunched:
        logger.warning("session %s lost its loop; relaunching it", session_id)
        current().run(RUN_SESSION, session_id)
    return relaunched


def evaluation_executor(session_id: int | None = None):
    """Where evaluations run, as a search_engine `Executor` (`submit(request, key=None)`):
    a session's own, or (no session) the process's shared one."""
    return current().evaluation_executor(session_id)


def evaluation_stored(key: str) -> dict | None:
    """The stored result of evaluation `key` once decided (None: undecided or unknown);
    a job the infrastructure lost meanwhile is sent again or failed with the reason."""
    job = EvaluationJob.objects.filter(key=key).first()
    if job is None:
        return None
    if job.state in (EvaluationJob.State.QUEUED, EvaluationJob.State.RUNNING):
        executors.job_recover(job, executors.broker_epoch())
        job.refresh_from_db()
    return job.result if job.state == EvaluationJob.State.DONE else None


def document_ingest(document_id: int) -> None:
    """Index a document in the background once the transaction that stored it commits."""
    transaction.on_commit(lambda: current().run(INGEST_DOCUMENT, document_id))


def problem_coverage(problem_id: int) -> None:
    """Compute a problem's offline coverage in the background after the commit (a broker
    error must not fail the request that asked)."""
    transaction.on_commit(lambda: current().run(PROBLEM_COVERAGE, problem_id), robust=True)
