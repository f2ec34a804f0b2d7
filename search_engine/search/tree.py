"""The search tree: every candidate is a node; the root holds the reference.

Node dict (what `Node.to_dict()` returns, what events carry and what the web app stores;
`SearchTree.from_dicts` rebuilds a tree from a list of them)::

    {
      "id": 3,                      # int, 0 is the root (the reference)
      "parent_id": 0,               # None for the root
      "depth": 1,
      "source": "...",              # candidate Python source (the reference's for the root)
      "origin": {                   # how the node was made
        "synthesizer": "offline",   # "offline" | "llm" | "reference"
        "transformation": "warps_up",
        "params": {...},            # template parameters (offline) or model settings (llm)
        "prompt": "...",            # the prompt sent (llm), "" otherwise
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0},
        "memory_mode": "trajectory",  # trajectory | siblings | both | restart
        "island": 0,                # evolution only
        "second_parent_id": None,   # crossover partner (evolution)
        "context": [{"document": ..., "page": ..., "score": ...}],
        "context_query": "...",
        "notes": "...",
      },
      "status": "pending",          # pending | reference | cancelled | pruned | screened |
                                    # a result status
      # origin["screen"] (screened configurations, finalists too): {"passed", "reason",
      # "median_ms", "samples", "method", "rank", "finalist"}; origin["screened"]: True on
      # those not fully evaluated
      "reward": 1.2, "return": 1.5, "advantage": 0.3,   # None until evaluated
      "speedup_vs_eager": 1.4, "speedup_vs_compile": 0.9, "coverage": 1.0,
      "diagnostics_summary": {"bottleneck": "memory-bound", "reason": "...", "message": "...",
                              "integrity_flags": ["check: evidence", ...]},
      "baselines": {"eager_ms": ..., "compile_ms": ...},  # root only, once measured
      "result": {...} | None,       # EvaluationResult.to_dict() without logs
    }

Whoever stores nodes reads them as `search_engine.candidate.CandidateRecord` (one shape).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from search_engine.candidate import bottleneck_of
from search_engine.evaluation.result import EvaluationResult, is_tainted
from search_engine.synthesis.base import NodeView

PENDING, REFERENCE, CANCELLED = "pending", "reference", "cancelled"
# A child whose configuration cannot run on the target (origin["pruned"] says why): shown in
# the tree, never evaluated, not counted against the budget.
PRUNED = "pruned"
# A configuration that was screened (timed and spot-checked in a warm sandbox, see
# evaluation/screening.py) and not sent to full evaluation: origin["screen"] holds its
# timing or why it failed. Shown in the tree, never evaluated, never the best.
SCREENED = "screened"


@dataclass
class Node:
    id: int
    parent_id: int | None
    depth: int
    source: str
    origin: dict[str, Any] = field(default_factory=dict)
    status: str = PENDING
    result: EvaluationResult | None = None
    advantage: float | None = None
    ret: float | None = None  # G: the return along the chain (see credit.py)
    baselines: dict[str, Any] = field(default_factory=dict)

    @property
    def evaluated(self) -> bool:
        return self.result is not None

    @property
    def reward(self) -> float | None:
        return self.result.reward if self.result is not None else None

    @property
    def is_clean_correct(self) -> bool:
        """Correct and not tainted by any integrity flag of severity `hack`."""
        return (self.result is not None and self.result.status == "correct"
                and not is_tainted(self.result.integrity_flags))

    def diagnostics_summary(self) -> dict[str, Any]:
        if self.result is None:
            return {}
        bottleneck = bottleneck_of(self.result.diagnostics)
        return {
            "bottleneck": bottleneck.get("class", ""),
            "reason": bottleneck.get("reason", ""),
            "message": self.result.message[:500],
            "integrity_flags": [f"{f.check}: {f.evidence}"[:300]
                                for f in self.result.integrity_flags],
        }

    def view(self) -> NodeView:
        r = self.result
        return NodeView(
            id=self.id, source=self.source, origin=self.origin, status=self.status,
            reward=self.reward, speedup_vs_eager=r.speedup_vs_eager if r else None,
            message=r.message if r else "", diagnostics=dict(r.diagnostics) if r else {},
            integrity_flags=[{"check": f.check, "evidence": f.evidence, "severity": f.severity}
                             for f in r.integrity_flags] if r else [],
            coverage=r.coverage if r else None,
        )

    def to_dict(self) -> dict[str, Any]:
        r = self.result
        result = None
        if r is not None:
            result = r.to_dict()
            result.pop("logs", None)
        return {
            "id": self.id, "parent_id": self.parent_id, "depth": self.depth,
            "source": self.source, "origin": self.origin, "status": self.status,
            "reward": self.reward, "return": self.ret, "advantage": self.advantage,
            "speedup_vs_eager": r.speedup_vs_eager if r else None,
            "speedup_vs_compile": r.speedup_vs_compile if r else None,
            "coverage": r.coverage if r else None,
            "diagnostics_summary": self.diagnostics_summary(),
            "baselines": self.baselines,
            "result": result,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Node":
        result = data.get("result")
        return cls(
            id=int(data["id"]), parent_id=data.get("parent_id"), depth=int(data.get("depth", 0)),
            source=data.get("source", ""), origin=dict(data.get("origin") or {}),
            status=data.get("status", PENDING),
            result=EvaluationResult.from_dict(result) if result else None,
            advantage=data.get("advantage"), ret=data.get("return"),
            baselines=dict(data.get("baselines") or {}),
        )


class SearchTree:
    def __init__(self) -> None:
        self.nodes: dict[int, Node] = {}
        self.children: dict[int, list[int]] = {}

    @property
    def root(self) -> Node:
        return self.nodes[0]

    def add(self, node: Node) -> Node:
        if node.id in self.nodes:
            raise ValueError(f"node {node.id} already exists")
        if node.parent_id is not None and node.parent_id not in self.nodes:
            raise ValueError(f"node {node.id} names a missing parent {node.parent_id}")
        self.nodes[node.id] = node
        self.children.setdefault(node.id, [])
        if node.parent_id is not None:
            self.children[node.parent_id].append(node.id)
        return node

    def new_id(self) -> int:
        return max(self.nodes, default=-1) + 1

    def kids(self, node_id: int) -> list[Node]:
        return [self.nodes[i] for i in self.children.get(node_id, [])]

    def ancestors(self, node_id: int) -> list[Node]:
        """Root first, up to and including `node_id`."""
        chain, current = [], self.nodes.get(node_id)
        while current is not None:
            chain.append(current)
            current = self.nodes.get(current.parent_id) if current.parent_id is not None else None
        return list(reversed(chain))

    def subtree(self, node_id: int) -> Iterable[Node]:
        stack = [node_id]
        while stack:
            node = self.nodes[stack.pop()]
            yield node
            stack.extend(self.children.get(node.id, []))

    def evaluated(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.evaluated]

    def sources(self) -> set[str]:
        return {n.source for n in self.nodes.values()}

    def best(self) -> Node | None:
        """The best correct, untainted node: highest reward, then speedup, then oldest."""
        clean = [n for n in self.nodes.values() if n.is_clean_correct]
        if not clean:
            return None
        return max(clean, key=lambda n: (n.reward or 0.0, n.result.speedup_vs_eager or 0.0,
                                         -n.id))

    def to_dicts(self) -> list[dict[str, Any]]:
        return [self.nodes[i].to_dict() for i in sorted(self.nodes)]

    @classmethod
    def from_dicts(cls, rows: Iterable[dict[str, Any]]) -> "SearchTree":
        tree = cls()
        nodes = sorted((Node.from_dict(r) for r in rows), key=lambda n: n.id)
        if not nodes or nodes[0].id != 0 or nodes[0].parent_id is not None:
            raise ValueError("stored nodes must include the root (id 0, no parent)")
        for node in nodes:
            tree.add(node)
        return tree
