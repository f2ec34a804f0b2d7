"""Shared fixtures: two teams (alpha, beta) with a user of each role in each.

Environment for the whole suite is set here, before anything imports triton or the
embedding model: the Triton interpreter on hosts without a GPU, and no hub downloads.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
# settings.py gave this run (this parallel worker) a temporary data dir; subprocesses
# (servers, workers) share it.
os.environ["KERNELHUB_DATA_DIR"] = str(__import__("django.conf").conf.settings.KERNELHUB_DATA_DIR)


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


if not _has_cuda():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402

ROLES = ("viewer", "engineer", "reviewer", "admin")

TINY_PROBLEM = (Path(__file__).parent / "tiny_problem.py").read_text()


def port_is_open(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


@pytest.fixture
def tiny_problem_source() -> str:
    return TINY_PROBLEM


@pytest.fixture
def teams(db):
    """{"alpha": Team, "beta": Team, "users": {("alpha", "viewer"): User, ...}}."""
    from django.contrib.auth import get_user_model

    from kernelhub.teams.services import membership_set, team_create

    User = get_user_model()
    result = {"users": {}}
    for team_name in ("alpha", "beta"):
        team = team_create(name=team_name)
        result[team_name] = team
        for role in ROLES:
            user = User.objects.create_user(username=f"{team_name}-{role}", password="pw-" + role)
            membership_set(team=team, user=user, role=role)
            result["users"][(team_name, role)] = user
    return result


@pytest.fixture
def hardware(db):
    from kernelhub.optimization.services import hardware_targets_sync

    return {t.name: t for t in hardware_targets_sync()}


@pytest.fixture
def library_problem(db, tiny_problem_source):
    """A library problem (no team), stored without the subprocess validation."""
    import hashlib

    from kernelhub.optimization.models import Problem

    return Problem.objects.create(
        name="tiny-relu", family="elementwise", source=tiny_problem_source,
        source_sha256=hashlib.sha256(tiny_problem_source.encode()).hexdigest(),
    )


@pytest.fixture(autouse=True)
def fast_password_hasher(settings):
    # PBKDF2's 1M rounds cost ~0.5 s a user on CI's CPUs; the hasher is not under test.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def require_service(name: str, host: str, port: int) -> None:
    """Skip when a service is down, unless CI says it must be up (then fail loudly)."""
    if port_is_open(host, port):
        return
    message = f"{name} does not answer on {host}:{port}"
    if os.environ.get("KERNELHUB_REQUIRE_SERVICES"):
        pytest.fail(message + " (KERNELHUB_REQUIRE_SERVICES is set)")
    pytest.skip(message + "; start it as ../shared/services.md says")


@pytest.fixture
def redis_url() -> str:
    require_service("Redis", "127.0.0.1", 6379)
    return os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture
def postgres_available() -> None:
    require_service("PostgreSQL", "127.0.0.1", 5432)


def _drop_celery_connections(app) -> None:
    # Celery caches its broker pool, producer pool and result backend on first use:
    # without this, a test that points it at another Redis database keeps publishing
    # to whichever one an earlier test used.
    app._pool = None
    app.__dict__.get("amqp") and setattr(app.__dict__["amqp"], "_producer_pool", None)
    app._backend_cache = None
    app._local.__dict__.pop("backend", None)


@pytest.fixture
def celery_on_redis():
    """celery_on_redis(url): send this process's tasks to Celery workers on Redis `url`
    (restored after the test)."""
    from kernelhub.celery import app

    old = (app.conf.broker_url, app.conf.result_backend, app.conf.task_always_eager)

    def point_at(url: str) -> None:
        app.conf.broker_url, app.conf.result_backend, app.conf.task_always_eager = url, url, False
        _drop_celery_connections(app)

    yield point_at
    app.conf.broker_url, app.conf.result_backend, app.conf.task_always_eager = old
    _drop_celery_connections(app)
