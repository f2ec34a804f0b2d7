"""Typed search events, emitted in order through the caller's callback.

Every event is a JSON-serializable dict::

    {"seq": 7, "type": "node_evaluated", "session": "abc", "ts": 1764430000.1,
     "payload": {...}}

types and payloads:
- ``node_created``: the node dict (see tree.py), status ``pending`` (``reference`` for the root);
- ``node_evaluated``: the node dict with its result, plus ``"advantages": {id: A}`` for every
  node whose TRLOO advantage changed with this result (ids as strings, JSON keys);
- ``best_improved``: ``{"node_id", "reward", "speedup_vs_eager", "speedup_vs_compile",
  "previous_node_id"}``;
- ``status_changed``: ``{"status": running|paused|completed|cancelled|failed, "reason",
  "evaluated"}``; a pause for an endpoint outage adds ``"outage": {"status_code", "error",
  "failures", "retry_in_s", "since"}`` and the resume after it ``"outage_over": true``;
- ``synthesis_failed``: ``{"parent_id", "error", "transient", "status_code", "model",
  "usage"}``: an expansion that gave no candidate (its tokens and cost still count);
- ``log``: ``{"level": "info"|"warning"|"error", "message"}``.

``seq`` starts at 1 and increases by one per event of the session (a rebuilt runner goes on
from the next number it is given).
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any, Callable

EVENT_TYPES = ("node_created", "node_evaluated", "best_improved", "status_changed", "log",
               "synthesis_failed")


class EventEmitter:
    def __init__(self, session: str, callback: Callable[[dict[str, Any]], None] | None,
                 next_seq: int = 1, clock: Callable[[], float] = time.time):
        self.session = session
        self.callback = callback
        self.next_seq = next_seq
        self.clock = clock
        self._lock = threading.Lock()
        self.history: list[dict[str, Any]] = []

    def emit(self, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        if kind not in EVENT_TYPES:
            raise ValueError(f"unknown event type {kind!r}")
        with self._lock:
            event = {"seq": self.next_seq, "type": kind, "session": self.session,
                     "payload": _jsonable(payload), "ts": self.clock()}
            self.next_seq += 1
            self.history.append(event)
            if self.callback is not None:
                self.callback(event)
        return event

    def log(self, message: str, level: str = "info") -> None:
        self.emit("log", {"level": level, "message": message})


def _jsonable(value: Any) -> Any:
    """A JSON-safe copy: non-finite floats become None, keys strings, tuples lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(v) for v in value]
    return str(value)
