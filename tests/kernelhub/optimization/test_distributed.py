"""Distributed mode for real: PostgreSQL, Redis, and Celery workers on the `search` and
`gpu.interpreter` queues run a session; its events reach the browser's group via Redis.

Runs when the test database is PostgreSQL (`make test-postgres`, CI) and Redis answers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.db import connection

from kernelhub.optimization.models import Candidate, SearchSession
from kernelhub.optimization.services import session_create, session_start

REPO = Path(__file__).resolve().parents[3]
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow,
              pytest.mark.postgres, pytest.mark.redis,
              pytest.mark.xdist_group("shared-redis")]  # one xdist worker on the shared Redis


@pytest.fixture
def postgres_db():
    if connection.vendor != "postgresql":
        pytest.skip("distributed-mode test: the test database is not PostgreSQL "
                    "(run `make test-postgres`)")
    settings = connection.settings_dict
    return (f"postgres://{settings['USER'] or 'postgres'}@{settings['HOST'] or '127.0.0.1'}:"
            f"{settings['PORT'] or 5432}/{settings['NAME']}")


@pytest.fixture
def celery_workers(postgres_db, redis_url, tmp_path):
    env = {**os.environ, "DATABASE_URL": postgres_db, "REDIS_URL": redis_url,
           "KERNELHUB_DATA_DIR": str(tmp_path), "TRITON_INTERPRET": "1",
           "PYTHONUNBUFFERED": "1"}
    celery = str(Path(sys.executable).with_name("celery"))
    workers = []
    for name, queues, concurrency in (("search", "search", 1), ("gpu", "gpu.interpreter", 2)):
        log = open(tmp_path / f"{name}.log", "w")
        workers.append((subprocess.Popen(
            [celery, "-A", "kernelhub", "worker", "-Q", queues, "-c", str(concurrency),
             "-n", f"{name}-test@%h", "-l", "info", "--without-gossip", "--without-mingle"],
            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        ), tmp_path / f"{name}.log"))
    yield workers
    for proc, _ in workers:
        os.killpg(proc.pid, signal.SIGTERM)
    for proc, _ in workers:
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.fixture
def distributed_settings(settings, redis_url, celery_on_redis):
    settings.KERNELHUB_EXECUTOR = "celery"
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                                           "CONFIG": {"hosts": [redis_url]}}}
    celery_on_redis(redis_url)
    return settings


def test_celery_workers_run_a_session_and_events_flow_through_redis(
    teams, hardware, library_problem, celery_workers, distributed_settings
):
    from channels.layers import get_channel_layer

    session = session_create(
        user=teams["users"][("alpha", "engineer")], team=teams["alpha"], problem=library_problem,
        hardware=hardware["interpreter"], budget_evaluations=2, seed=3,
    )
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(f"session-{session.pk}", channel)

    session_start(session)
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline:
        session.refresh_from_db()
        if not session.is_active:
            break
        time.sleep(1)
    logs = "\n".join(path.read_text()[-3000:] for _, path in celery_workers)
    assert session.status == SearchSession.Status.FINISHED, session.status_message + logs
    assert session.evaluated_count == 2
    assert Candidate.objects.filter(session=session, status="correct").exists(), list(
        Candidate.objects.filter(session=session).values_list("status", "message"))
    assert "kernelhub.evaluate_candidate" in logs and "kernelhub.run_session" in logs

    received = []
    while True:
        try:
            message = async_to_sync(_receive_with_timeout)(layer, channel)
        except TimeoutError:
            break
        received.append(message["event"])
    seqs = [e["seq"] for e in received]
    assert seqs and seqs == sorted(seqs), seqs
    assert {"node_created", "node_evaluated"} <= {e["type"] for e in received}


async def _receive_with_timeout(layer, channel):
    import asyncio

    return await asyncio.wait_for(layer.receive(channel), timeout=2)
