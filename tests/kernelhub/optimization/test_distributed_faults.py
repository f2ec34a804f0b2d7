"""Faults injected into the real distributed mode: PostgreSQL, Redis and Celery worker
processes started here (a `search` worker and two `gpu.interpreter` workers). The first test
runs a session of 16 evaluations undisturbed, the others a session of 8 with a fault injected;
each checks the accounting afterwards: the session finished, every candidate was evaluated
exactly once for the budget (one ledger job each, started again only when its worker was
lost), and nothing the infrastructure did was blamed on a kernel.

The GPU workers keep their pool child between evaluations here (KERNELHUB_EVAL_TASKS_PER_CHILD
=0): a fresh child per evaluation (the production default) measures the reference again each
time, which on CI's two cores would take these tests past their time.

Runs when the test database is PostgreSQL (`make test-postgres`, CI) and `redis-server` exists
(each test runs its own Redis server: conftest.py's `own_redis`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kernelhub.optimization.models import Candidate, EvaluationJob, SearchSession
from kernelhub.optimization.services import session_create, session_start
from tests.kernelhub.optimization.test_distributed import postgres_db  # noqa: F401 (a fixture)

REPO = Path(__file__).resolve().parents[3]
BUDGET, FAULT_BUDGET = 16, 8
SESSION_DEADLINE_S = 420
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow,
              pytest.mark.postgres, pytest.mark.redis,
              pytest.mark.xdist_group("shared-redis")]  # one xdist worker on the shared Redis


class Worker:
    """One Celery worker process (and its pool children), stopped by its process group."""

    def __init__(self, name: str, queues: str, env: dict, log_dir: Path, extra=(),
                 concurrency: int = 1):
        self.name, self.queues, self.env = name, queues, env
        self.extra, self.concurrency = list(extra), concurrency
        self.log = log_dir / f"{name}.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> "Worker":
        celery = str(Path(sys.executable).with_name("celery"))
        self.proc = subprocess.Popen(
            [celery, "-A", "kernelhub", "worker", "-Q", self.queues, "-c", str(self.concurrency),
             "-n", f"{self.name}@%h", "-l", "info", "--without-gossip", "--without-mingle",
             "--without-heartbeat", *self.extra],
            cwd=REPO, env=self.env, stdout=self.log.open("a"), stderr=subprocess.STDOUT,
            start_new_session=True)
        return self

    def kill(self, sig: int = signal.SIGKILL) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def kill_pool_child(self) -> bool:
        found = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True,
                               text=True).stdout.split()
        for pid in found:
            os.kill(int(pid), signal.SIGKILL)
        return bool(found)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.kill(signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.kill(signal.SIGKILL)
            self.proc.wait(5)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self) -> str:
        return f"--- {self.name} ---\n" + self.log.read_text()[-2500:]


@pytest.fixture
def cluster(postgres_db, own_redis, celery_on_redis, settings, tmp_path):
    """{"search": Worker, "gpu-a": Worker, "gpu-b": Worker, "new": callable, "url": str,
    "redis": OwnRedis}: on a Redis server of the test's own (conftest.py), which a test may
    restart without disturbing anyone else's."""
    url = own_redis.url
    env = {**os.environ, "DATABASE_URL": postgres_db, "REDIS_URL": url,
           "KERNELHUB_EXECUTOR": "celery", "KERNELHUB_DATA_DIR": str(tmp_path),
           "TRITON_INTERPRET": "1", "PYTHONUNBUFFERED": "1",
           # fast fault detection, so the faults below are noticed within seconds
           "KERNELHUB_JOB_STALE_S": "6", "KERNELHUB_SESSION_LEASE_S": "5",
           "KERNELHUB_WORKER_BEAT_S": "1", "KERNELHUB_EVAL_TASKS_PER_CHILD": "0"}
    settings.KERNELHUB_EXECUTOR = "celery"
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                                           "CONFIG": {"hosts": [url]}}}
    celery_on_redis(url)
    workers = {name: Worker(name, queues, env, tmp_path).start() for name, queues in (
        ("search", "search"), ("gpu-a", "gpu.interpreter"), ("gpu-b", "gpu.interpreter"))}
    started = []

    def new(name: str, queues: str) -> Worker:
        worker = Worker(name, queues, env, tmp_path).start()
        started.append(worker)
        return worker

    yield {**workers, "new": new, "url": url, "redis": own_redis}
    for worker in [*workers.values(), *started]:
        worker.stop()


def launch(teams, hardware, problem, budget: int = FAULT_BUDGET) -> SearchSession:
    session = session_create(
        user=teams["users"][("alpha", "engineer")], team=teams["alpha"], problem=problem,
        hardware=hardware["interpreter"], budget_evaluations=budget, budget_minutes=30, seed=5,
        config={"children_per_step": 2, "max_in_flight": 4})
    session_start(session)
    return session


def wait_until(condition, timeout_s: float, what: str, logs=()) -> None:
    """Poll `condition`; fail at the deadline, or at once when a worker of `logs` died."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        dead = [w.name for w in logs if not w.alive]
        if dead:
            raise AssertionError(f"worker {dead} died waiting for {what}\n"
                                 + "\n".join(w.tail() for w in logs))
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}\n" + "\n".join(w.tail() for w in logs))


def running_job_on(worker: str, session: SearchSession):
    return EvaluationJob.objects.filter(session=session, state="running",
                                        worker__startswith=f"{worker}@").first()


def wait_finished(session: SearchSession, workers) -> None:
    wait_until(lambda: not SearchSession.objects.get(pk=session.pk).is_active,
               SESSION_DEADLINE_S, f"session {session.pk} to finish", workers)


def assert_accounted(session: SearchSession, lost_starts: int = 0) -> None:
    """Finished; every candidate evaluated once for the budget; no infrastructure failure
    charged to a kernel; at most `lost_starts` starts beyond one per job (each fault injected
    into a running evaluation costs one)."""
    session.refresh_from_db()
    assert session.status == SearchSession.Status.FINISHED, session.status_message
    children = Candidate.objects.filter(session=session).exclude(parent=None)
    statuses = list(children.values_list("status", flat=True))
    budget = session.budget_evaluations
    assert session.evaluated_count == budget == len(statuses), (session.evaluated_count, statuses)
    assert "pending" not in statuses and "cancelled" not in statuses, statuses
    messages = " ".join(children.values_list("message", flat=True))
    for blame in ("WorkerLostError", "did not return", "infrastructure", "TimeoutError"):
        assert blame not in messages, messages
    jobs = EvaluationJob.objects.filter(session=session)
    assert jobs.count() == len(set(children.values_list("source", flat=True))) == budget
    assert set(jobs.values_list("state", flat=True)) == {"done"}
    attempts = list(jobs.values_list("attempts", flat=True))
    assert min(attempts) == 1 and sum(attempts) - len(attempts) <= lost_starts, attempts
    assert children.filter(status="correct").exists()


def test_a_session_of_16_evaluations_across_two_workers_accounts_for_every_candidate(
        teams, hardware, library_problem, cluster):
    session = launch(teams, hardware, library_problem, budget=BUDGET)
    workers = [cluster["search"], cluster["gpu-a"], cluster["gpu-b"]]
    wait_finished(session, workers)
    assert_accounted(session)
    ran_on = {w.split("@")[0] for w in EvaluationJob.objects.filter(session=session)
              .values_list("worker", flat=True)}
    assert ran_on == {"gpu-a", "gpu-b"}, ran_on


def test_a_gpu_worker_killed_mid_evaluation_loses_nothing(teams, hardware, library_problem,
                                                          cluster):
    """First only the pool child dies (the message goes back to the queue), then the whole
    worker (its message stays unacknowledged: the ledger sees the heartbeat stop)."""
    session = launch(teams, hardware, library_problem)
    workers = [cluster["search"], cluster["gpu-a"], cluster["gpu-b"]]
    wait_until(lambda: running_job_on("gpu-a", session), 120, "gpu-a to run a job", workers)
    first = running_job_on("gpu-a", session)
    assert cluster["gpu-a"].kill_pool_child()
    wait_until(lambda: EvaluationJob.objects.filter(session=session, state="running",
                                                    worker__startswith="gpu-a@")
               .exclude(pk=first.pk, attempts=first.attempts).exists(),
               120, "gpu-a to run a job again", workers)
    cluster["gpu-a"].kill()
    wait_finished(session, [cluster["search"], cluster["gpu-b"]])
    assert_accounted(session, lost_starts=2)
    assert not cluster["gpu-a"].alive and cluster["gpu-b"].alive


def test_redis_restarted_mid_session_loses_nothing_and_the_workers_live_on(
        teams, hardware, library_problem, cluster):
    import redis

    session = launch(teams, hardware, library_problem)
    workers = [cluster["search"], cluster["gpu-a"], cluster["gpu-b"]]
    wait_until(lambda: Candidate.objects.filter(session=session).exclude(parent=None)
               .exclude(status="pending").count() >= 3, 180, "3 evaluations", workers)
    client = redis.Redis.from_url(cluster["url"])
    before = client.info("server")["run_id"]
    cluster["redis"].stop()
    time.sleep(2)
    cluster["redis"].start()
    assert client.info("server")["run_id"] != before
    wait_finished(session, workers)
    assert_accounted(session)
    assert all(w.alive for w in workers), "\n".join(w.tail() for w in workers)


def test_the_session_runner_killed_mid_session_is_relaunched_from_its_stored_nodes(
        teams, hardware, library_problem, cluster):
    session = launch(teams, hardware, library_problem)
    workers = [cluster["search"], cluster["gpu-a"], cluster["gpu-b"]]
    wait_until(lambda: Candidate.objects.filter(session=session).exclude(parent=None)
               .exclude(status="pending").count() >= 3, 180, "3 evaluations", workers)
    cluster["search"].kill()  # the loop, its worker and its run_session message's delivery
    cluster["search"].proc.wait(10)
    replacement = cluster["new"]("search-2", "search")
    wait_finished(session, [replacement, cluster["gpu-a"], cluster["gpu-b"]])
    assert_accounted(session)
    assert session.lease.relaunches >= 1
