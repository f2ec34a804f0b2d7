"""Warm, single-use sandboxes: `SandboxPool` starts them ahead and hands each out once."""

from __future__ import annotations

import os
import shutil
import time
from collections import deque

from search_engine.evaluation.cancellation import track
from search_engine.evaluation.config import SandboxLimits
from search_engine.evaluation.sandbox import SandboxSession, make_workdir


class SandboxPool:
    """Warm, single-use sandboxes: processes started ahead (Python, torch, Triton and, on a
    GPU, the CUDA context already up), each handed to exactly one candidate and then thrown
    away; a replacement starts in the background as soon as one is taken."""

    def __init__(self, module: str, args: list[str], *, size: int, limits: SandboxLimits,
                 env_extra: dict[str, str] | None = None, gpu: bool = False,
                 log_chars: int = 4000, start_timeout_s: float = 300.0,
                 starters: int | None = None):
        import queue
        import threading

        self.module, self.args, self.size = module, args, max(1, size)
        self.limits, self.env_extra, self.gpu = limits, env_extra, gpu
        self.log_chars, self.start_timeout_s = log_chars, start_timeout_s
        self._ready: queue.Queue = queue.Queue()
        self._wanted: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._starting = 0
        self._closed = False
        self.started = self.taken = 0
        # Long-lived starter threads: the sandbox dies with the thread that spawned it
        # (PR_SET_PDEATHSIG follows the thread), so that thread must outlive the sandbox.
        # Several (half the cores by default), because a start takes seconds and a search
        # takes sandboxes faster.
        self.starters = min(self.size, starters or max(2, (os.cpu_count() or 2) // 2))
        self.start_seconds: deque[float] = deque(maxlen=64)  # last starts, for benchmarks
        for i in range(self.starters):
            threading.Thread(target=self._starter, daemon=True,
                             name=f"kernelhub-sandbox-warm-{i}").start()
        for _ in range(self.size):
            self._refill()

    def take(self, timeout_s: float) -> SandboxSession:
        """A started session with `timeout_s` of budget (started now if none is warm)."""
        session = self._take_ready(self._ready.get_nowait)
        if session is None and self._starting:  # one is nearly up: cheaper than a new one
            session = self._take_ready(lambda: self._ready.get(timeout=self.start_timeout_s))
        self._refill()
        if session is None:
            session = self._new_session()
            try:
                session.start()
            except BaseException:
                session.close()
                shutil.rmtree(session.workdir, ignore_errors=True)
                raise
        with self._lock:
            self.taken += 1
        session.budget_s, session.used_s = timeout_s, 0.0
        return track(session)  # the taking evaluation's scope may kill it

    def _take_ready(self, get) -> SandboxSession | None:
        """The next warm session `get` yields that is still alive: one that died while it
        waited is thrown away (and replaced), never handed to a candidate whose verdict its
        death would become."""
        import queue

        while True:
            try:
                session = get()
            except queue.Empty:
                return None
            if session.alive:
                return session
            session.close()
            shutil.rmtree(session.workdir, ignore_errors=True)
            self._refill()

    def _new_session(self) -> SandboxSession:
        return SandboxSession(self.module, self.args, make_workdir(),
                              timeout_s=self.start_timeout_s, limits=self.limits,
                              env_extra=self.env_extra, gpu=self.gpu, log_chars=self.log_chars)

    def _refill(self) -> None:
        with self._lock:
            if self._closed or self._ready.qsize() + self._starting >= self.size:
                return
            self._starting += 1
        self._wanted.put(True)

    def _starter(self) -> None:
        while self._wanted.get():
            self._start_one()

    def _start_one(self) -> None:
        session = self._new_session()
        t0 = time.monotonic()
        try:
            session.start()
            self.start_seconds.append(round(time.monotonic() - t0, 3))
        except Exception:  # noqa: BLE001 - a failed warm start: take() starts one inline
            session.close()
            shutil.rmtree(session.workdir, ignore_errors=True)
            session = None
        with self._lock:
            self._starting -= 1
            if session is not None:
                self.started += 1
                if self._closed:
                    session.close()
                    shutil.rmtree(session.workdir, ignore_errors=True)
                else:
                    self._ready.put(session)

    def close(self) -> None:
        import queue

        with self._lock:
            self._closed = True
        for _ in range(self.starters):
            self._wanted.put(False)
        while True:
            try:
                session = self._ready.get_nowait()
            except queue.Empty:
                return
            session.close()
            shutil.rmtree(session.workdir, ignore_errors=True)

