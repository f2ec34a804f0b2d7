"""One timing at a time per GPU, across threads and processes (an flock per device).

Each acquisition opens its own file description, so two threads of one process exclude
each other as well as two CLI processes on one host.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path


def lock_path(device_key: str) -> Path:
    safe = "".join(ch if ch.isalnum() else "_" for ch in device_key)
    return Path(tempfile.gettempdir()) / f"kernelhub-gpu-timing-{safe}.lock"


@contextmanager
def gpu_timing_lock(device_key: str):
    path = lock_path(device_key)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def cuda_device_key() -> str:
    """The lock's name for the first visible GPU (one worker per GPU pins it)."""
    return f"cuda{os.environ.get('CUDA_VISIBLE_DEVICES', '0').split(',')[0]}"


class TimingLockHandler:
    """Answers the sandbox child's `request_gpu` / `release_gpu` messages."""

    def __init__(self, device_key: str):
        self.device_key = device_key
        self._held = None
        self.wait_s = 0.0

    def __call__(self, msg: dict, reply) -> None:
        import time

        if msg.get("event") == "request_gpu" and self._held is None:
            t0 = time.monotonic()
            self._held = gpu_timing_lock(self.device_key)
            self._held.__enter__()
            self.wait_s += time.monotonic() - t0
            reply("go")
        elif msg.get("event") == "release_gpu":
            self.release()

    def release(self) -> None:
        if self._held is not None:
            held, self._held = self._held, None
            held.__exit__(None, None, None)
