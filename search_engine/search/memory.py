"""Node memory operators (KernelEvolve): what a synthesizer sees when it expands a node.

- ``trajectory``: the chain of ancestors (oldest first, the expanded node last), each with its
  status, reward and diagnosis: the node inherits its parent's history;
- ``siblings``: the evaluated children the expanded node already has (what was tried from
  the same code and how it did), so the next child learns from them;
- ``both``: trajectory and siblings;
- ``restart``: a clean start from the reference, nothing inherited.
"""

from __future__ import annotations

from search_engine.search.tree import SearchTree
from search_engine.synthesis.base import MemoryView

MAX_TRAJECTORY = 6
MAX_SIBLINGS = 8


def memory_view(tree: SearchTree, parent_id: int, mode: str) -> MemoryView:
    if mode not in ("trajectory", "siblings", "both", "restart"):
        raise ValueError(f"unknown memory mode {mode!r}")
    if mode == "restart":
        return MemoryView("restart")
    trajectory, siblings = [], []
    if mode in ("trajectory", "both"):
        chain = [n for n in tree.ancestors(parent_id) if n.id != 0]
        trajectory = [n.view() for n in chain[-MAX_TRAJECTORY:]]
    if mode in ("siblings", "both"):
        kids = [n for n in tree.kids(parent_id) if n.evaluated]
        siblings = [n.view() for n in kids[-MAX_SIBLINGS:]]
    return MemoryView(mode, trajectory, siblings)
