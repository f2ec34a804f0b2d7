"""Quiet timing on a GPU, across threads and processes (flocks per device).

Three locks per device:
- the *timing* lock: one timing at a time (exclusive);
- the *activity* lock: any other work of ours on the GPU (a candidate's correctness calls,
  the ghost replay, the problem's sandbox drawing and judging trials) holds it shared; a
  timing takes it exclusive, so while one candidate is timed nothing else of ours runs on
  that GPU. A timing waits at most `quiet_wait_s` for the others to finish a call; past that
  it times anyway and says so.
- the *gate*: a waiting timing holds it, and new activity passes it first, so a stream of
  overlapping short calls cannot keep a timing waiting (flock alone favours readers).

Each acquisition opens its own file description, so two threads of one process exclude
each other as well as two CLI processes on one host.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path


def lock_path(device_key: str, kind: str = "timing") -> Path:
    safe = "".join(ch if ch.isalnum() else "_" for ch in device_key)
    suffix = "" if kind == "timing" else f"-{kind}"
    return Path(tempfile.gettempdir()) / f"kernelhub-gpu-timing-{safe}{suffix}.lock"


def cuda_device_key() -> str:
    """The locks' name for the first visible GPU (one worker per GPU pins it)."""
    return f"cuda{os.environ.get('CUDA_VISIBLE_DEVICES', '0').split(',')[0]}"


@contextmanager
def _flock(path: Path, mode: int, wait_s: float | None = None):
    """Hold `path` locked with `mode`; with `wait_s`, yield False (unlocked) after waiting."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    held = False
    try:
        if wait_s is None:
            fcntl.flock(fd, mode)
            held = True
        else:
            deadline = time.monotonic() + wait_s
            while True:
                try:
                    fcntl.flock(fd, mode | fcntl.LOCK_NB)
                    held = True
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        break
                    time.sleep(0.01)
        yield held
    finally:
        if held:
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


@contextmanager
def gpu_timing_lock(device_key: str):
    """One timing at a time on this device."""
    with _flock(lock_path(device_key), fcntl.LOCK_EX):
        yield


@contextmanager
def quiet_gpu(device_key: str, quiet_wait_s: float = 30.0):
    """Exclusive use of the GPU for a timing: yields whether the others went quiet."""
    with gpu_timing_lock(device_key), _flock(lock_path(device_key, "gate"), fcntl.LOCK_EX), \
            _flock(lock_path(device_key, "activity"), fcntl.LOCK_EX, wait_s=quiet_wait_s) as quiet:
        yield quiet


@contextmanager
def gpu_activity(device_key: str | None):
    """Work that must not overlap a timing (held shared: many at once); None: no GPU."""
    if device_key is None:
        yield
        return
    with ExitStack() as held:
        with _flock(lock_path(device_key, "gate"), fcntl.LOCK_SH):  # behind a waiting timing
            held.enter_context(_flock(lock_path(device_key, "activity"), fcntl.LOCK_SH))
        yield
