"""Loopback load test of the distributed mode (prints numbers; results go to BENCHMARKS.md).

  python benchmarks/distributed_load.py [--sessions 8] [--gpu-workers 4] [--budget 6]

Starts, on this host only: a fresh PostgreSQL database (`kernelhub_load` on
127.0.0.1:5432), a Redis database of its own (127.0.0.1:6379/9), one `search` worker with a
slot per session and N `gpu.interpreter` workers (Triton interpreter); launches the sessions
at once on the tiny ReLU problem and reports, once all have ended:

- completed evaluations per minute (ledger jobs done / wall time from launch to last end),
- queue wait p50/p95 (a job's start minus its queueing),
- event latency p50/p95 (an event's arrival on the Redis channel layer minus its storage),
- the accounting: evaluated == budget for every session, jobs started more than once.

Everything it started is stopped by process id at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
DB_NAME = "kernelhub_load"
PG = "postgres://postgres@127.0.0.1:5432"
REDIS = "redis://127.0.0.1:6379/9"


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def fresh_database() -> None:
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB_NAME}")


def environment(data_dir: Path) -> dict:
    return {**os.environ, "DATABASE_URL": f"{PG}/{DB_NAME}", "REDIS_URL": REDIS,
            "KERNELHUB_EXECUTOR": "celery", "KERNELHUB_DATA_DIR": str(data_dir),
            "TRITON_INTERPRET": "1", "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1",
            "KERNELHUB_EVAL_TASKS_PER_CHILD": os.environ.get("KERNELHUB_EVAL_TASKS_PER_CHILD",
                                                             "0")}


def start_worker(name: str, queues: str, concurrency: int, env: dict, logs: Path):
    celery = str(Path(sys.executable).with_name("celery"))
    return subprocess.Popen(
        [celery, "-A", "kernelhub", "worker", "-Q", queues, "-c", str(concurrency),
         "-n", f"{name}@%h", "-l", "warning", "--without-gossip", "--without-mingle",
         "--without-heartbeat"],
        cwd=REPO, env=env, stdout=(logs / f"{name}.log").open("w"),
        stderr=subprocess.STDOUT, start_new_session=True)


def stop(procs) -> None:
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


class EventClock(threading.Thread):
    """Receives every session's events from the Redis channel layer; arrival - stored."""

    def __init__(self, session_ids: list[int]):
        super().__init__(daemon=True)
        self.session_ids, self.latencies_ms, self.stop = session_ids, [], threading.Event()

    def run(self) -> None:
        asyncio.run(self._listen())

    async def _listen(self) -> None:
        from datetime import datetime

        from channels.layers import get_channel_layer

        layer = get_channel_layer()
        channel = await layer.new_channel()
        for session_id in self.session_ids:
            await layer.group_add(f"session-{session_id}", channel)
        while not self.stop.is_set():
            try:
                message = await asyncio.wait_for(layer.receive(channel), timeout=1)
            except asyncio.TimeoutError:
                continue
            stored = datetime.fromisoformat(message["event"]["ts"]).timestamp()
            self.latencies_ms.append((time.time() - stored) * 1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--gpu-workers", type=int, default=4)
    parser.add_argument("--budget", type=int, default=6)
    parser.add_argument("--timeout-s", type=float, default=1800)
    args = parser.parse_args()

    import tempfile

    data_dir = Path(tempfile.mkdtemp(prefix="kernelhub-load-"))
    env = environment(data_dir)
    os.environ.update({k: env[k] for k in ("DATABASE_URL", "REDIS_URL", "KERNELHUB_EXECUTOR",
                                           "KERNELHUB_DATA_DIR", "TRITON_INTERPRET")})
    os.environ["DJANGO_SETTINGS_MODULE"] = "kernelhub.settings"
    fresh_database()
    import django

    django.setup()
    import redis
    from django.core.management import call_command

    redis.Redis.from_url(REDIS).flushdb()
    call_command("migrate", verbosity=0)
    sessions = launch_sessions(args)
    procs = [start_worker("search", "search", args.sessions, env, data_dir)]
    procs += [start_worker(f"gpu{i}", "gpu.interpreter", 1, env, data_dir)
              for i in range(args.gpu_workers)]
    clock = EventClock([s.pk for s in sessions])
    clock.start()
    try:
        time.sleep(1)
        from kernelhub.optimization.services import session_start

        started = time.monotonic()
        for session in sessions:
            session_start(session)
        wall = wait_all(sessions, args.timeout_s) or (time.monotonic() - started)
        clock.stop.set()
        report(sessions, wall, clock.latencies_ms, args)
    finally:
        stop(procs)
        print(f"worker logs: {data_dir}")


def launch_sessions(args):
    import hashlib

    from django.contrib.auth import get_user_model

    from kernelhub.optimization.models import Problem
    from kernelhub.optimization.services import hardware_targets_sync, session_create
    from kernelhub.teams.services import membership_set, team_create

    source = (REPO / "tests" / "tiny_problem.py").read_text()
    team = team_create(name="load")
    user = get_user_model().objects.create_user(username="load-engineer", password="x")
    membership_set(team=team, user=user, role="engineer")
    hardware = {t.name: t for t in hardware_targets_sync()}
    problem = Problem.objects.create(name="tiny-relu", family="elementwise", source=source,
                                     source_sha256=hashlib.sha256(source.encode()).hexdigest())
    return [session_create(user=user, team=team, problem=problem,
                           hardware=hardware["interpreter"], budget_evaluations=args.budget,
                           seed=i, config={"children_per_step": 2, "max_in_flight": 2})
            for i in range(args.sessions)]


def wait_all(sessions, timeout_s: float) -> float | None:
    from kernelhub.optimization.models import SearchSession

    started = time.monotonic()
    ids = [s.pk for s in sessions]
    while time.monotonic() - started < timeout_s:
        if not SearchSession.objects.filter(pk__in=ids,
                                            status__in=SearchSession.ACTIVE_STATUSES).exists():
            return time.monotonic() - started
        time.sleep(1)
    print(f"not all sessions ended within {timeout_s:g} s")
    return None


def report(sessions, wall_s: float, latencies_ms: list[float], args) -> None:
    from kernelhub.optimization.models import EvaluationJob, SearchSession

    ids = [s.pk for s in sessions]
    jobs = EvaluationJob.objects.filter(session_id__in=ids, state="done")
    waits = [(j.started_at - j.queued_at).total_seconds() for j in jobs
             if j.started_at and j.queued_at]
    rows = SearchSession.objects.filter(pk__in=ids)
    print(f"{args.sessions} sessions x budget {args.budget} on {args.gpu_workers} "
          f"gpu.interpreter workers (loopback, {os.cpu_count()} CPUs)")
    print(f"  wall time                 {wall_s:8.1f} s")
    print(f"  evaluations completed     {jobs.count():8d}")
    print(f"  evaluations per minute    {jobs.count() / (wall_s / 60):8.2f}")
    print(f"  queue wait p50 / p95      {percentile(waits, .5):8.2f} / {percentile(waits, .95):.2f} s")
    print(f"  event latency p50 / p95   {percentile(latencies_ms, .5):8.1f} / "
          f"{percentile(latencies_ms, .95):.1f} ms ({len(latencies_ms)} events)")
    print(f"  sessions finished         {rows.filter(status='finished').count():8d} / {len(ids)}")
    print(f"  evaluated == budget       "
          f"{sum(1 for r in rows if r.evaluated_count == r.budget_evaluations):8d} / {len(ids)}")
    print(f"  jobs started twice        {jobs.filter(attempts__gt=1).count():8d}")
    if waits:
        print(f"  mean queue wait           {statistics.mean(waits):8.2f} s")


if __name__ == "__main__":
    main()
