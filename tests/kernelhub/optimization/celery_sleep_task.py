"""A task for the worker fault tests (imported by their workers with `-I`): it marks when and
where it started, sleeps, and marks its end, with the evaluation task's delivery options."""

from __future__ import annotations

import time
from pathlib import Path

from celery import shared_task


@shared_task(name="tests.sleep_marked", bind=True, acks_late=True, reject_on_worker_lost=True)
def sleep_marked(self, label: str, seconds: float, marker_dir: str) -> str:
    worker = (self.request.hostname or "?").split("@")[0]
    Path(marker_dir, f"{label}.started").write_text(worker)
    time.sleep(seconds)
    Path(marker_dir, f"{label}.done").write_text(worker)
    return worker
