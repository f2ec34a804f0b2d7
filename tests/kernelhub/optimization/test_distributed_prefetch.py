"""No job waits behind a busy worker, across a broker restart: two real Celery workers
(one slot each, the project's settings) on a Redis server of this test's own, which it
restarts while one worker runs a long job. A job queued afterwards must go to the idle
worker, and a further one must stay in Redis (for whichever worker frees first), never be
taken by the busy worker ("Skipping prefetch count reduction" let it take one).

Runs when the test database is PostgreSQL (the workers' presence) and `redis-server` exists
(the `own_redis` fixture: conftest.py).
"""

from __future__ import annotations

import os
import time

import pytest

from tests.kernelhub.optimization.test_distributed import postgres_db  # noqa: F401 (a fixture)
from tests.kernelhub.optimization.test_distributed_faults import REPO, Worker, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow,
              pytest.mark.postgres, pytest.mark.redis,
              pytest.mark.xdist_group("shared-redis")]  # one xdist worker on the shared Redis
QUEUE = "gpu.interpreter"  # on the test's own Redis
LONG_S = 60.0


def connections(worker: Worker) -> int:
    return worker.log.read_text().count("Connected to redis://")


def test_after_a_redis_restart_a_busy_worker_takes_no_job_while_another_is_idle(
        postgres_db, own_redis, celery_on_redis, tmp_path):  # noqa: F811
    from tests.kernelhub.optimization.celery_sleep_task import sleep_marked

    env = {**os.environ, "DATABASE_URL": postgres_db, "REDIS_URL": own_redis.url,
           "KERNELHUB_EXECUTOR": "celery", "KERNELHUB_DATA_DIR": str(tmp_path),
           "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1", "KERNELHUB_WORKER_BEAT_S": "1"}
    celery_on_redis(own_redis.url)
    markers = tmp_path / "markers"
    markers.mkdir()
    extra = ["-I", "tests.kernelhub.optimization.celery_sleep_task"]
    workers = [Worker(name, QUEUE, env, tmp_path, extra).start() for name in ("wa", "wb")]
    try:
        for worker in workers:
            wait_until(lambda w=worker: " ready." in w.log.read_text(), 120,
                       f"{worker.name} to be ready", workers)

        def send(label: str, seconds: float) -> None:
            sleep_marked.apply_async(args=[label, seconds, str(markers)], queue=QUEUE)

        def started(label: str) -> str:
            path = markers / f"{label}.started"
            return path.read_text() if path.exists() else ""

        send("first", LONG_S)
        wait_until(lambda: started("first"), 60, "the first job to start", workers)
        busy = started("first")
        idle = next(w.name for w in workers if w.name != busy)

        before = {w.name: connections(w) for w in workers}
        own_redis.stop()
        time.sleep(1)
        own_redis.start()
        wait_until(lambda: all(connections(w) > before[w.name] for w in workers), 90,
                   "both workers to reconnect", workers)
        time.sleep(2)  # both consumers are listening again

        send("second", LONG_S)
        wait_until(lambda: started("second"), 30, "the second job to start", workers)
        assert started("second") == idle, "the second job waited behind the busy worker"
        send("third", 1)
        time.sleep(5)  # room for a busy worker to (wrongly) take it
        assert not started("third")
        assert own_redis.client().llen(QUEUE) == 1, (
            "a busy worker took the third job it cannot start\n"
            + "\n".join(w.tail() for w in workers))
        assert not (markers / "first.done").exists(), "the first job ended too soon to tell"
    finally:
        for worker in workers:
            worker.kill()
