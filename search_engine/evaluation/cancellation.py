"""Cancelling an evaluation in flight: a search out of time kills its sandboxes.

`LocalExecutor` runs each evaluation inside a `CancelScope` (a context variable of the
worker thread). Every sandbox the evaluation starts or takes from the warm pool is tracked
there, so `CancelScope.cancel()` from another thread kills them at once: the evaluation's
next wait on its sandbox fails (`SandboxDied` or `SandboxTimeout`) and its thread returns
within moments instead of at the end of the candidate's time budget.
"""

from __future__ import annotations

import contextlib
import threading
from contextvars import ContextVar

_current: ContextVar["CancelScope | None"] = ContextVar("kernelhub_cancel_scope", default=None)


class CancelScope:
    """The sandboxes of one evaluation, and whether it was cancelled."""

    def __init__(self) -> None:
        self._sessions: list = []
        self._lock = threading.Lock()
        self.cancelled = False

    @contextlib.contextmanager
    def entered(self):
        token = _current.set(self)
        try:
            yield self
        finally:
            _current.reset(token)

    def add(self, session) -> None:
        with self._lock:
            cancelled = self.cancelled
            if not cancelled:
                self._sessions.append(session)
        if cancelled:
            session.kill()

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            sessions, self._sessions = self._sessions, []
        for session in sessions:
            session.kill()


def track(session):
    """Register `session` with the running evaluation's scope (if any) and return it; a
    scope already cancelled kills it at once."""
    scope = _current.get()
    if scope is not None:
        scope.add(session)
    return session
