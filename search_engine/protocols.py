"""The doors of the search engine: small protocols the web app, the CLI and tests implement.

A search takes a Problem, a HardwareTarget, a Synthesizer, an Executor, a ContextProvider
and an event callback. Nothing here knows about Django.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from search_engine.evaluation.result import EvaluationResult
from search_engine.hardware import HardwareTarget


@dataclass
class ContextPassage:
    """A retrieved piece of knowledge (manual chunk or distilled skill)."""

    text: str
    document: str
    score: float
    page: int | None = None
    section: str = ""
    kind: str = "document"  # "document" or "skill"
    metadata: dict[str, Any] = field(default_factory=dict)


class ContextProvider(Protocol):
    def retrieve(
        self,
        query: str,
        hardware: str | None = None,
        categories: list[str] | None = None,
        k: int = 5,
    ) -> list[ContextPassage]: ...


class NullContextProvider:
    """No knowledge base: the search still runs."""

    def retrieve(self, query, hardware=None, categories=None, k=5) -> list[ContextPassage]:
        return []


@dataclass
class EvaluationRequest:
    problem_source: str
    candidate_source: str
    target: str  # HardwareTarget.name
    precision_policy: str = "strict"
    timeout_s: float = 120.0
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class ScreenRequest:
    """Many configurations of one program to screen (`evaluation.screening`): timings and
    spot-checks to rank them, never a reported result. `timeout_s` is per configuration;
    `deadline_s` (optional) the seconds after the screening starts when no more
    configurations start (those left come back skipped)."""

    problem_source: str
    sources: list[str]
    target: str  # HardwareTarget.name
    precision_policy: str = "strict"
    timeout_s: float = 60.0
    deadline_s: float | None = None
    options: dict[str, Any] = field(default_factory=dict)


class Executor(Protocol):
    """Where evaluations run: local subprocesses, or Celery GPU queues."""

    def submit(self, request: EvaluationRequest) -> "Future[EvaluationResult]": ...

    def shutdown(self) -> None: ...

    # optional: `screen(ScreenRequest) -> Future[ScreenResult]`, where the executor can
    # screen (LocalExecutor); a search without it fully evaluates every child


EventCallback = Callable[[dict[str, Any]], None]

__all__ = [
    "ContextPassage",
    "ContextProvider",
    "NullContextProvider",
    "EvaluationRequest",
    "ScreenRequest",
    "Executor",
    "EventCallback",
    "HardwareTarget",
]
