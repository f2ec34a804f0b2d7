"""Dashboard: team sessions with best speedups, and the GPU worker status in both modes."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.urls import reverse

from kernelhub import dashboard
from kernelhub.optimization.models import SearchSession

pytestmark = [pytest.mark.django_db, pytest.mark.xdist_group("shared-redis")]  # one xdist worker on the shared Redis


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()
    yield
    cache.clear()


def login(client, team, role):
    assert client.login(username=f"{team}-{role}", password=f"pw-{role}")


def test_sessions_with_best_speedups_are_scoped(client, teams, hardware, library_problem):
    SearchSession.objects.create(team=teams["alpha"], problem=library_problem,
                                 hardware=hardware["h200"], status="running",
                                 best_speedup_vs_eager=3.21, best_speedup_vs_compile=1.87)
    SearchSession.objects.create(team=teams["alpha"], problem=library_problem,
                                 hardware=hardware["h200"], status="finished",
                                 best_speedup_vs_eager=2.22)
    SearchSession.objects.create(team=teams["beta"], problem=library_problem,
                                 hardware=hardware["h200"], status="running",
                                 best_speedup_vs_eager=9.99)
    login(client, "alpha", "viewer")
    page = client.get(reverse("dashboard")).content.decode()
    assert "3.21" in page and "1.87" in page and "2.22" in page and "9.99" not in page
    assert 'id="workers"' in page and "embedded" in page


def test_local_worker_status_reads_the_executor(teams, hardware, library_problem, settings,
                                                monkeypatch):
    settings.KERNELHUB_EXECUTOR = "local"
    from kernelhub.optimization import executors

    class FakePool:
        class _work_queue:
            @staticmethod
            def qsize():
                return 3

    class FakeExecutor:
        max_workers = 4
        _pool = FakePool()

    monkeypatch.setattr(executors, "_local_executor", FakeExecutor())
    SearchSession.objects.create(team=teams["alpha"], problem=library_problem,
                                 hardware=hardware["interpreter"], status="running")
    status = dashboard.local_worker_status()
    worker = status["workers"][0]
    assert status["mode"] == "embedded" and worker["online"] and worker["busy"]
    assert worker["capacity"] == 4 and worker["active"] == 1
    assert status["queues"] == [{"name": "local evaluations", "length": 3}]


def test_distributed_status_from_celery_inspect_and_redis(hardware, settings, monkeypatch,
                                                          redis_url):
    import redis

    settings.KERNELHUB_EXECUTOR = "celery"
    settings.REDIS_URL = redis_url
    client = redis.Redis.from_url(redis_url)
    client.delete("gpu.h200", "search")
    client.rpush("gpu.h200", "job-1", "job-2")

    class FakeInspect:
        def __init__(self, timeout):
            assert timeout <= 1.0  # the dashboard never waits long on workers

        def active(self):
            return {"gpu0@node1": [{"id": "t1"}], "search@node1": []}

        def active_queues(self):
            return {"gpu0@node1": [{"name": "gpu.h200"}], "search@node1": [{"name": "search"}]}

    from kernelhub.celery import app

    monkeypatch.setattr(app.control, "inspect", lambda timeout: FakeInspect(timeout))
    try:
        status = dashboard.worker_status()
    finally:
        client.delete("gpu.h200")
    workers = {w["name"]: w for w in status["workers"]}
    assert status["mode"] == "distributed" and not status["error"]
    assert workers["gpu0@node1"]["busy"] and not workers["search@node1"]["busy"]
    lengths = {q["name"]: q["length"] for q in status["queues"]}
    assert lengths["gpu.h200"] == 2 and lengths["search"] == 0 and "gpu.mi300x" in lengths


def test_distributed_status_survives_a_dead_broker(hardware, settings, monkeypatch):
    settings.KERNELHUB_EXECUTOR = "celery"
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    from kernelhub.celery import app

    def broken(timeout):
        raise ConnectionError("broker down")

    monkeypatch.setattr(app.control, "inspect", broken)
    status = dashboard.worker_status()
    assert "workers unreachable" in status["error"]
    assert "queue lengths unavailable" in status["error"]
    assert all(q["length"] is None for q in status["queues"])
