"""The Synthesizer protocol: how the search asks for new candidate kernels.

The search loop hands a synthesizer one `SynthesisRequest` per expansion: the problem, the
node being expanded (its code, how it was made, its evaluation), the node-memory view chosen
for this expansion (ancestor trajectory and/or sibling results, or a clean restart), the
hardware ceilings and the passages a `ContextProvider` retrieved for the node's diagnosis.
The synthesizer answers with `Proposal`s: candidate sources plus how they were made.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from search_engine.hardware import HardwareTarget
from search_engine.protocols import ContextPassage


class NotCoveredError(Exception):
    """The synthesizer cannot write a kernel for this problem; `ops` names what stopped it."""

    def __init__(self, message: str, ops: list[str] | None = None):
        self.ops = sorted(set(ops or []))
        suffix = f" (stopped by ops: {', '.join(self.ops)})" if self.ops else ""
        super().__init__(message + suffix)


class SynthesisError(Exception):
    """A synthesizer failed to produce any candidate (e.g. an endpoint kept failing).

    `usage`: the tokens and cost the failed attempts spent (they count against the budget);
    `transient`: the endpoint is unavailable (timeouts, 429, 5xx), so the search pauses and
    retries instead of ending; `status_code`: the last HTTP status, when there was one."""

    def __init__(self, message: str, *, usage: dict[str, Any] | None = None,
                 transient: bool = False, status_code: int | None = None,
                 model: str = ""):
        super().__init__(message)
        self.usage = dict(usage or {})
        self.transient = transient
        self.status_code = status_code
        self.model = model


@dataclass
class NodeView:
    """What a synthesizer may see of one tree node (a compact, JSON-friendly summary)."""

    id: int
    source: str
    origin: dict[str, Any]
    status: str
    reward: float | None = None
    speedup_vs_eager: float | None = None
    message: str = ""
    diagnostics: dict[str, Any] = field(default_factory=dict)
    integrity_flags: list[dict[str, Any]] = field(default_factory=list)
    coverage: float | None = None

    def summary(self) -> dict[str, Any]:
        """The short form used in memory views and prompts (no source)."""
        return {
            "id": self.id,
            "transformation": self.origin.get("transformation", ""),
            "params": self.origin.get("params", {}),
            "status": self.status,
            "reward": self.reward,
            "speedup_vs_eager": self.speedup_vs_eager,
            "bottleneck": self.diagnostics.get("bottleneck", ""),
            "message": (self.message or "")[:300],
        }


@dataclass
class MemoryView:
    """The node-memory operator's view for one expansion (KernelEvolve).

    mode: "trajectory" (the chain of ancestors with their diagnoses), "siblings" (what the
    parent's other children tried and how they did), "both", or "restart" (a clean start
    from the reference: nothing inherited).
    """

    mode: str
    trajectory: list[NodeView] = field(default_factory=list)
    siblings: list[NodeView] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "trajectory": [n.summary() for n in self.trajectory],
            "siblings": [n.summary() for n in self.siblings],
        }


@dataclass
class SynthesisRequest:
    problem_source: str
    target: HardwareTarget
    parent: NodeView  # the node being expanded (the root's source is the reference)
    memory: MemoryView
    context: list[ContextPassage] = field(default_factory=list)
    context_query: str = ""
    precision_policy: str = "strict"
    second_parent: NodeView | None = None  # crossover partner (evolution)
    known_sources: set[str] = field(default_factory=set)  # sources already in the tree


@dataclass
class Proposal:
    source: str
    transformation: str
    params: dict[str, Any] = field(default_factory=dict)
    prompt: str = ""
    usage: dict[str, Any] = field(default_factory=dict)  # prompt/completion tokens, cost_usd
    notes: str = ""
    # Set when the answer broke a cap (too large): the node is recorded as failed with this
    # message and never evaluated.
    rejected: str = ""
    model: str = ""  # which model wrote it (LLM synthesizers)
    sent: dict[str, Any] = field(default_factory=dict)  # what was sent: system prompt, passages
    # The move that made it from its parent (offline): name, changed params, the parent's
    # diagnosis and why; the search adds "effect" (time and diagnosis before/after).
    move: dict[str, Any] = field(default_factory=dict)
    # Set when the configuration cannot run on the target ("pruned.shared_memory: ..."): the
    # node is recorded with status `pruned` and this reason, and never evaluated (no budget).
    pruned: str = ""

    def origin(self, synthesizer: str) -> dict[str, Any]:
        data = asdict(self)
        data.pop("source")
        data["synthesizer"] = synthesizer
        return data


class Synthesizer(Protocol):
    name: str
    supports_crossover: bool

    def propose(self, request: SynthesisRequest, n: int, rng: random.Random) -> list[Proposal]:
        """Up to `n` new candidates derived from `request.parent` (fewer when exhausted)."""
        ...
