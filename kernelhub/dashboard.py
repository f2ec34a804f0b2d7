"""The dashboard's read model: everything on it is scoped to the user's teams."""

from __future__ import annotations

import logging
import os
import socket

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache

from kernelhub import placement
from kernelhub.charts import figure_json
from kernelhub.optimization.models import HardwareTarget, SearchSession
from kernelhub.queues import SEARCH_QUEUE, gpu_queue
from kernelhub.optimization.selectors import (
    approved_speedups_for_user,
    evaluations_per_day_for_user,
    session_bests_for_user,
)
from kernelhub.optimization.selectors import live_workers, session_list_for_user
from kernelhub.optimization.session_state import session_state
from kernelhub.review.selectors import approved_kernels_for_user, review_queue_for_user
from kernelhub.teams.selectors import team_list_for_user, teams_where_user_can

logger = logging.getLogger(__name__)
WORKER_STATUS_CACHE_S = 5


def knowledge_size(user: AbstractBaseUser) -> dict:
    """Documents, chunks and skills of the knowledge base that `user` may read."""
    from knowledge.selectors import KnowledgeScope, knowledge_stats

    return knowledge_stats(scope=KnowledgeScope.for_user(user))


def worker_status(timeout_s: float = 0.5) -> dict:
    """GPU workers (online, busy) and queue lengths; cached briefly, never slow.

    {"mode": "embedded" | "distributed", "workers": [...], "queues": [...], "error": str}."""
    found = cache.get("kernelhub:worker-status")
    if found is None:
        if placement.evaluations_run_here():
            found = local_worker_status()
        else:
            found = celery_worker_status(timeout_s)
        cache.set("kernelhub:worker-status", found, WORKER_STATUS_CACHE_S)
    return found


def local_worker_status() -> dict:
    """The embedded default: this server's LocalExecutor (evaluations as subprocesses)."""
    from kernelhub.optimization import executors

    executor = getattr(executors, "_local_executor", None)
    capacity = executor.max_workers if executor else max(1, (os.cpu_count() or 2) - 1)
    pool = getattr(executor, "_pool", None)
    queued = pool._work_queue.qsize() if pool is not None else 0
    running = SearchSession.objects.filter(status=SearchSession.Status.RUNNING).count()
    return {
        "mode": "embedded",
        "workers": [{
            "name": f"local@{socket.gethostname()}", "queues": "local subprocesses",
            "online": True, "busy": running > 0 or queued > 0,
            "active": running, "capacity": capacity,
        }],
        "queues": [{"name": "local evaluations", "length": queued}],
        "error": "",
    }


def celery_worker_status(timeout_s: float) -> dict:
    """Distributed mode: Celery's inspect (short timeout) and the Redis queue lengths."""
    from kernelhub.celery import app

    result = {"mode": "distributed", "workers": [], "queues": [], "error": ""}
    queue_names = {SEARCH_QUEUE} | {
        gpu_queue(name) for name in HardwareTarget.objects.values_list("name", flat=True)}
    try:
        inspect = app.control.inspect(timeout=timeout_s)
        active = inspect.active() or {}
        worker_queues = inspect.active_queues() or {}
    except Exception as exc:  # a dead broker is a status to show, not a page error
        logger.warning("celery inspect failed: %s", exc)
        active, worker_queues = {}, {}
        result["error"] = f"workers unreachable: {type(exc).__name__}: {exc}"
    for presence in live_workers():  # heartbeats stored by the workers themselves
        result["workers"].append(presence_row(presence))
        queue_names.update(q for q in presence.queues.split(",") if q)
    reported = {w["name"] for w in result["workers"]}
    for name in sorted((set(active) | set(worker_queues)) - reported):
        queues = [q.get("name", "?") for q in worker_queues.get(name, [])]
        queue_names.update(queues)
        tasks = active.get(name, [])
        result["workers"].append({
            "name": name, "queues": ", ".join(queues) or "–", "online": True,
            "busy": bool(tasks), "active": len(tasks), "capacity": None,
        })
    result["queues"] = queue_lengths(sorted(queue_names), result)
    return result


def presence_row(presence) -> dict:
    return {"name": presence.name, "queues": presence.queues.replace(",", ", ") or "–",
            "online": True, "busy": presence.busy, "active": int(presence.busy),
            "capacity": None, "gpu": presence.gpu_name, "target": presence.target,
            "candidate": presence.current_candidate}


def queue_lengths(names: list[str], result: dict) -> list[dict]:
    try:
        import redis

        client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=0.5,
                                      socket_connect_timeout=0.5)
        return [{"name": name, "length": client.llen(name)} for name in names]
    except Exception as exc:
        result["error"] = (result["error"] + "; " if result["error"] else "") + \
            f"queue lengths unavailable: {type(exc).__name__}: {exc}"
        return [{"name": name, "length": None} for name in names]


def sessions_not_moving(running) -> list[dict]:
    """The active sessions that wait (for a loop slot, a worker, the LLM endpoint), each
    with its state: [{"session", "state"}]."""
    rows = [{"session": session, "state": session_state(session)} for session in running]
    return [row for row in rows if row["state"].waiting]


def dashboard_summary(user: AbstractBaseUser) -> dict:
    sessions = session_list_for_user(user)
    running = list(sessions.filter(status__in=SearchSession.ACTIVE_STATUSES)[:20])
    return {
        "teams": team_list_for_user(user),
        "running_sessions": running,
        "waiting_sessions": sessions_not_moving(running),
        "finished_sessions": sessions.exclude(status__in=SearchSession.ACTIVE_STATUSES)[:20],
        "approved_kernels": approved_kernels_for_user(user)[:10],
        "review_queue_count": review_queue_for_user(user).count(),
        "knowledge": knowledge_size(user),
        "worker_status": worker_status(),
        "can_launch": bool(teams_where_user_can(user, "launch")),
    }


def dashboard_charts(user: AbstractBaseUser) -> dict:
    """The dashboard's Plotly figures as JSON (None where there is nothing to draw yet)."""
    from kernelhub import charts

    return {
        "approved": figure_json(charts.approved_kernels_figure(approved_speedups_for_user(user))),
        "evaluations": figure_json(charts.evaluations_figure(evaluations_per_day_for_user(user))),
        "best": figure_json(charts.best_over_time_figure(session_bests_for_user(user))),
    }
