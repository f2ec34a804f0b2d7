"""One candidate, defined once: a node of the search tree with the facts of its evaluation.

The search emits nodes as dicts (`search_engine/search/tree.py`); whoever stores them
(the web app's `Candidate` rows) reads them through `CandidateRecord.from_node` and
rebuilds them with `to_node`. Each fact has one place: the headline facts of the
evaluation (`FACTS`: status, speedups, timing, diagnostics, integrity flags, ...) are
fields of their own, and `details` holds only the rest of the `EvaluationResult`
(per-trial errors, target, precision policy, speedup label, isolation, duration, logs).
`result()` composes the whole `EvaluationResult.to_dict()` again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The EvaluationResult keys that are fields of the record (and columns where it is stored).
FACTS = ("status", "message", "reward", "speedup_vs_eager", "speedup_vs_compile", "coverage",
         "timing", "diagnostics", "integrity_flags")
MESSAGE_CHARS = 4000  # what a stored message keeps


def bottleneck_of(diagnostics: dict[str, Any] | None) -> dict[str, Any]:
    """The bottleneck of `diagnostics` as {"class", "reason"} (old results hold a bare
    string); {} when there is none."""
    found = (diagnostics or {}).get("bottleneck") or {}
    return found if isinstance(found, dict) else {"class": str(found)}


@dataclass
class CandidateRecord:
    node_id: int
    parent_node_id: int | None
    depth: int = 0
    source: str = ""
    origin: dict[str, Any] = field(default_factory=dict)
    status: str = "pending"
    message: str = ""
    reward: float | None = None
    advantage: float | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    coverage: float | None = None
    timing: dict[str, Any] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)
    integrity_flags: list[dict[str, Any]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)  # the result without FACTS
    baselines: dict[str, Any] = field(default_factory=dict)  # the root's, once measured

    @property
    def evaluated(self) -> bool:
        return bool(self.details)

    @property
    def usage(self) -> dict[str, Any]:
        """The LLM tokens and cost of the request that wrote it."""
        return self.origin.get("usage") or {}

    @property
    def bottleneck(self) -> str:
        return bottleneck_of(self.diagnostics).get("class", "")

    @property
    def bottleneck_reason(self) -> str:
        return bottleneck_of(self.diagnostics).get("reason", "")

    @classmethod
    def from_node(cls, node: dict[str, Any]) -> "CandidateRecord":
        """From a node dict (`Node.to_dict()`, what the search's events carry)."""
        result = dict(node.get("result") or {})
        facts = {key: result.pop(key, None) for key in FACTS}
        return cls(
            node_id=int(node["id"]), parent_node_id=node.get("parent_id"),
            depth=int(node.get("depth") or 0), source=node.get("source") or "",
            origin=dict(node.get("origin") or {}), status=node.get("status") or "pending",
            message=(facts["message"] or "")[:MESSAGE_CHARS],
            reward=node.get("reward", facts["reward"]), advantage=node.get("advantage"),
            speedup_vs_eager=facts["speedup_vs_eager"],
            speedup_vs_compile=facts["speedup_vs_compile"], coverage=facts["coverage"],
            timing=facts["timing"] or {}, diagnostics=facts["diagnostics"] or {},
            integrity_flags=list(facts["integrity_flags"] or []), details=result,
            baselines=dict(node.get("baselines") or {}),
        )

    def result(self) -> dict[str, Any] | None:
        """The whole `EvaluationResult.to_dict()` (None until evaluated)."""
        if not self.evaluated:
            return None
        return {**self.details, "status": self.status, "message": self.message,
                "reward": self.reward, "speedup_vs_eager": self.speedup_vs_eager,
                "speedup_vs_compile": self.speedup_vs_compile, "coverage": self.coverage,
                "timing": self.timing, "diagnostics": self.diagnostics,
                "integrity_flags": self.integrity_flags}

    def to_node(self) -> dict[str, Any]:
        """The node dict `SearchTree.from_dicts` rebuilds a node from."""
        return {"id": self.node_id, "parent_id": self.parent_node_id, "depth": self.depth,
                "source": self.source, "origin": self.origin, "status": self.status,
                "result": self.result(), "advantage": self.advantage,
                "baselines": self.baselines}
