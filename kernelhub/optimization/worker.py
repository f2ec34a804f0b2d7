"""What a Celery worker's main process does beside consuming: it reports its presence
(queues, target, GPU name, busy or idle, the candidate it runs) every few seconds, and a
worker of the `search` queue relaunches sessions whose loop lost its lease.

The main process never imports torch (the GPU name comes from `nvidia-smi`), so each
evaluation's child process gets the only CUDA context.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import threading

from celery import signals
from django.conf import settings
from django.db import close_old_connections, connection
from django.utils import timezone

from kernelhub import placement
from kernelhub.optimization import ledger
from kernelhub.optimization.problem_services import problems_offline_coverage_request_pending
from kernelhub.queues import SEARCH_QUEUE, gpu_queue, is_gpu_queue, target_of

logger = logging.getLogger(__name__)
REAP_EVERY_S = 5.0
_stop = threading.Event()


def gpu_name(queues: list[str]) -> str:
    if os.environ.get("KERNELHUB_GPU_NAME"):
        return os.environ["KERNELHUB_GPU_NAME"]
    if not any(is_gpu_queue(q) for q in queues):
        return ""
    if gpu_queue("interpreter") in queues or not shutil.which("nvidia-smi"):
        return "CPU (Triton interpreter)"
    return nvidia_gpu_name()


def nvidia_gpu_name() -> str:
    device = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]
    try:
        found = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader",
                                "-i", device], capture_output=True, text=True, timeout=10)
        return found.stdout.strip().splitlines()[0] if found.returncode == 0 else "unknown GPU"
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown GPU"


def queues_this_host_cannot_serve(queues: list[str]) -> dict[str, str]:
    """{queue: why} for the `gpu.<target>` queues whose target this host cannot run: no GPU,
    or a GPU known to be another target. (Evaluations taken from them would fail for want of
    the device; refused, the target has no live worker and its sessions wait for one.)
    `KERNELHUB_GPU_NAME` declares the GPU where `nvidia-smi` cannot tell (ROCm hosts)."""
    from search_engine.hardware import TARGETS, target_for_gpu_name

    wanted = {q: target_of(q) for q in queues if is_gpu_queue(q)
              and target_of(q) in TARGETS and not TARGETS[target_of(q)].is_interpreter}
    if not wanted:
        return {}
    name = os.environ.get("KERNELHUB_GPU_NAME") or (
        nvidia_gpu_name() if shutil.which("nvidia-smi") else "")
    if not name and os.path.exists("/dev/kfd"):
        return {}  # a ROCm GPU nvidia-smi cannot name: trust the operator
    found = target_for_gpu_name(name) if name and name != "unknown GPU" else None
    refused = {}
    for queue, target in wanted.items():
        if not name:
            refused[queue] = f"this host has no GPU for target {target}"
        elif found is not None and found != target:
            refused[queue] = f"this host's GPU is {name} (target {found}), not {target}"
    return refused


@signals.celeryd_init.connect
def refuse_targets_this_host_cannot_run(sender=None, options=None, **_):
    queues = (options or {}).get("queues") or []
    queues = queues.split(",") if isinstance(queues, str) else list(queues)
    refused = queues_this_host_cannot_serve([q.strip() for q in queues])
    if refused:
        raise SystemExit("kernelhub worker not started: " + "; ".join(
            f"{queue}: {why}" for queue, why in refused.items())
            + " (start it on a host with that GPU, set KERNELHUB_GPU_NAME if this GPU is not "
            "detected, or use -Q gpu.interpreter)")


def active_task_ids() -> list[str]:
    from celery.worker import state

    return [request.id for request in list(state.active_requests)]


def presence_loop(name: str, queues: list[str]) -> None:
    started, gpu = timezone.now(), gpu_name(queues)
    next_reap = 0.0
    clock = 0.0
    while not _stop.wait(settings.KERNELHUB_WORKER_BEAT_S):
        clock += settings.KERNELHUB_WORKER_BEAT_S
        try:
            close_old_connections()
            ledger.presence_beat(name=name, queues=queues, gpu_name=gpu,
                                 current_task_ids=active_task_ids(), started_at=started)
            if SEARCH_QUEUE in queues and clock >= next_reap:
                next_reap = clock + REAP_EVERY_S
                placement.sessions_reap()
                problems_offline_coverage_request_pending()  # problems nobody opened
        except Exception:  # the database away for a moment: beat again next time
            logger.exception("worker heartbeat failed")
    connection.close()


@signals.worker_ready.connect
def start_presence(sender=None, **_):
    queues = sorted(sender.app.amqp.queues.consume_from or {})
    threading.Thread(target=presence_loop, args=(sender.hostname, queues), daemon=True,
                     name="kernelhub-presence").start()


@signals.worker_shutdown.connect
def end_presence(sender=None, **_):
    _stop.set()
    try:
        ledger.presence_gone(sender.hostname)
    except Exception:
        logger.warning("could not remove the presence of %s", sender.hostname)
