"""Session loops on real `search` workers (PostgreSQL, a Redis of the test's own, Celery):
what the API says of a session queued behind busy loop slots or without a GPU worker, a
cancel that revokes no empty task id, and loop messages redelivered after their worker was
killed, which must change nothing (the session ended, or its lease is held by another loop).

Runs when the test database is PostgreSQL and `redis-server` exists.
"""

from __future__ import annotations

import os
import threading
import time

import pytest
from rest_framework.test import APIClient

from kernelhub.optimization import ledger
from kernelhub.optimization.executors import CeleryExecutor
from kernelhub.optimization.models import Candidate, EvaluationJob, SearchSession, SessionLease
from kernelhub.optimization.services import (
    session_cancel, session_create, session_set_status, session_start,
)
from search_engine.protocols import EvaluationRequest
from tests.kernelhub.optimization.test_distributed import postgres_db  # noqa: F401 (a fixture)
from tests.kernelhub.optimization.test_distributed_faults import REPO, Worker, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow,
              pytest.mark.postgres, pytest.mark.redis,
              pytest.mark.xdist_group("shared-redis")]  # one xdist worker on the shared Redis
VISIBILITY_S = 6  # Redis hands an unacknowledged message out again after this long


@pytest.fixture
def loops(postgres_db, own_redis, celery_on_redis, settings, tmp_path):
    """new(name, concurrency) -> a `search` Worker on the test's Redis (stopped after)."""
    env = {**os.environ, "DATABASE_URL": postgres_db, "REDIS_URL": own_redis.url,
           "KERNELHUB_EXECUTOR": "celery", "KERNELHUB_DATA_DIR": str(tmp_path),
           "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1", "TRITON_INTERPRET": "1",
           "KERNELHUB_WORKER_BEAT_S": "1", "KERNELHUB_SESSION_LEASE_S": "5",
           "KERNELHUB_VISIBILITY_TIMEOUT_S": str(VISIBILITY_S)}
    settings.KERNELHUB_EXECUTOR = "celery"
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                                           "CONFIG": {"hosts": [own_redis.url]}}}
    celery_on_redis(own_redis.url)
    started: list[Worker] = []

    def new(name: str, concurrency: int) -> Worker:
        worker = Worker(name, "search", env, tmp_path, concurrency=concurrency).start()
        started.append(worker)
        wait_until(lambda: " ready." in worker.log.read_text(), 120, f"{name} to be ready",
                   [worker])
        return worker

    yield new
    for worker in started:
        worker.kill()


def launch(teams, hardware, problem) -> SearchSession:
    session = session_create(
        user=teams["users"][("alpha", "engineer")], team=teams["alpha"], problem=problem,
        hardware=hardware["interpreter"], budget_evaluations=2, budget_minutes=30, seed=5)
    session_start(session)
    return session


def api_state(teams, session) -> dict:
    client = APIClient()
    client.force_authenticate(teams["users"][("alpha", "viewer")])
    return client.get(f"/api/v1/sessions/{session.pk}/").json()


def waiting_on(teams, session) -> tuple[str, str]:
    state = api_state(teams, session)
    return state["state"], state["waiting_on_queue"]


def loop_owner(session) -> str:
    lease = SessionLease.objects.filter(session=session).first()
    return lease.owner if lease is not None else ""


def test_a_session_beyond_the_loop_slots_says_it_is_queued_and_cancel_revokes_no_empty_id(
        teams, hardware, library_problem, loops):
    search = loops("search", concurrency=1)
    first = launch(teams, hardware, library_problem)
    # before the search worker is seen live, the session waits for a worker on `search`:
    # wait for its loop to be running, waiting for the evaluation worker
    wait_until(lambda: waiting_on(teams, first) == ("waiting_for_worker", "gpu.interpreter"),
               120, "the first loop to wait for a gpu.interpreter worker", [search])

    second = launch(teams, hardware, library_problem)
    wait_until(lambda: api_state(teams, second)["state"] == "queued_for_loop", 30,
               "the second session to say it is queued", [search])
    state = api_state(teams, second)
    assert state["waiting_on_queue"] == "search" and state["status"] == "queued"
    assert "1 session loop holds" in state["state_detail"], state["state_detail"]

    session_cancel(first, teams["users"][("alpha", "engineer")])  # frees the slot
    wait_until(lambda: waiting_on(teams, second) == ("waiting_for_worker", "gpu.interpreter"),
               120, "the second session's loop to take the freed slot", [search])
    assert api_state(teams, first)["state"] == "cancelled"
    session_cancel(second, teams["users"][("alpha", "engineer")])
    wait_until(lambda: not ledger.lease_held(second.pk), 60, "the second loop to end", [search])

    # The race the loops may or may not hit, made certain: a job cancelled through its record
    # whose future is cancelled afterwards (its revoke is broadcast to the live worker).
    executor = CeleryExecutor(None)
    future = executor.submit(EvaluationRequest(problem_source=library_problem.source,
                                               candidate_source="# never run\n",
                                               target="interpreter"), key="revoke-once")
    executor.shutdown()  # this test drives the watcher's pass itself
    assert ledger.job_cancel(EvaluationJob.objects.get(key="revoke-once").pk)
    future.cancel()
    executor.check()
    time.sleep(3)  # room for the revokes to reach the worker
    assert "task_id must not be empty" not in search.log.read_text(), search.tail()


def test_loop_messages_redelivered_after_their_worker_died_change_nothing(
        teams, hardware, library_problem, loops):
    first_worker = loops("search-1", concurrency=2)
    held, ended = (launch(teams, hardware, library_problem) for _ in range(2))
    wait_until(lambda: all(loop_owner(s) for s in (held, ended)), 120,
               "both loops to start on search-1", [first_worker])
    first_worker.kill()  # both run_session messages stay unacknowledged in Redis
    first_worker.proc.wait(10)

    # `held`: another loop owns its lease now (as the reaper's relaunch would)
    other, stop = "elsewhere:1:relaunched", threading.Event()
    wait_until(lambda: ledger.lease_acquire(held.pk, other), 30, "the lease to expire")
    renewing = threading.Thread(target=_renew, args=(held.pk, other, stop), daemon=True)
    renewing.start()
    # `ended`: it ended while its message waited
    session_set_status(ended, SearchSession.Status.CANCELLED, "cancelled by the test")
    before = {s.pk: _snapshot(s) for s in (held, ended)}
    time.sleep(VISIBILITY_S + 1)

    try:
        second_worker = loops("search-2", concurrency=2)  # restores the unacknowledged ones
        wait_until(lambda: second_worker.log.read_text().count(
            "not active or run by another loop; not starting") >= 2, 60,
            "both redelivered messages to run", [second_worker])
        time.sleep(2)
        assert loop_owner(held) == other
        assert {s.pk: _snapshot(s) for s in (held, ended)} == before
        log = second_worker.log.read_text()
        assert log.count("kernelhub.run_session") >= 2 and "Traceback" not in log, log[-3000:]
    finally:
        stop.set()
        renewing.join(5)


def _renew(session_id: int, owner: str, stop: threading.Event) -> None:
    from django.db import connection

    try:
        while not stop.wait(1):
            ledger.lease_renew(session_id, owner)
    finally:
        connection.close()


def _snapshot(session: SearchSession) -> tuple:
    session.refresh_from_db()
    return (session.status, session.status_message, session.last_seq,
            Candidate.objects.filter(session=session).count())


def test_a_gpu_worker_on_a_host_without_that_gpu_refuses_to_start_and_sessions_wait(
        teams, hardware, library_problem, postgres_db, own_redis, tmp_path, settings):  # noqa: F811
    import shutil

    if shutil.which("nvidia-smi") or os.path.exists("/dev/kfd"):
        pytest.skip("this host has a GPU")
    env = {**os.environ, "DATABASE_URL": postgres_db, "REDIS_URL": own_redis.url,
           "KERNELHUB_EXECUTOR": "celery", "KERNELHUB_DATA_DIR": str(tmp_path),
           "PYTHONPATH": str(REPO), "KERNELHUB_WORKER_BEAT_S": "1"}
    env.pop("KERNELHUB_GPU_NAME", None)
    worker = Worker("gpu0", "gpu.h200", env, tmp_path).start()
    assert worker.proc.wait(120) != 0
    log = worker.log.read_text()
    assert "gpu.h200: this host has no GPU for target h200" in log, log[-2000:]
    settings.KERNELHUB_EXECUTOR = "celery"
    session = session_create(
        user=teams["users"][("alpha", "engineer")], team=teams["alpha"],
        problem=library_problem, hardware=hardware["h200"], budget_evaluations=2)
    ledger.lease_acquire(session.pk, "search@x:1:loop")
    state = api_state(teams, session)
    assert (state["state"], state["waiting_on_queue"]) == ("waiting_for_worker", "gpu.h200")
