"""Credit: turn-level leave-one-out advantage (TRLOO, from Dr. Kernel).

In a group of siblings made from the same parent, with G the return along the chain,

    A_i = G_i − (1/(N−1)) · Σ_{j≠i} G_j        and  A = G  when the group has one member.

The return of a node is its own reward plus the discounted best return among its evaluated
children, G = r + γ·max_c G_c (a node whose refinements did well gets credit for them).
γ defaults to 0.5; γ = 0 scores each turn by its own reward alone.
"""

from __future__ import annotations

from search_engine.search.tree import SearchTree

DEFAULT_GAMMA = 0.5


def trloo(returns: list[float]) -> list[float]:
    """Leave-one-out advantages for one group of sibling returns."""
    n = len(returns)
    if n == 0:
        return []
    if n == 1:
        return [float(returns[0])]
    total = float(sum(returns))
    return [g - (total - g) / (n - 1) for g in returns]


def node_returns(tree: SearchTree, gamma: float = DEFAULT_GAMMA) -> dict[int, float]:
    """G for every evaluated node (children before parents)."""
    returns: dict[int, float] = {}
    for node_id in sorted(tree.nodes, reverse=True):  # children have larger ids
        node = tree.nodes[node_id]
        if not node.evaluated:
            continue
        child_returns = [returns[c] for c in tree.children.get(node_id, []) if c in returns]
        returns[node_id] = float(node.reward or 0.0) + (
            gamma * max(child_returns) if child_returns else 0.0)
    return returns


def update_credit(tree: SearchTree, gamma: float = DEFAULT_GAMMA) -> dict[int, float]:
    """Recompute returns and advantages in place; returns the advantages that changed."""
    returns = node_returns(tree, gamma)
    changed: dict[int, float] = {}
    for parent_id, kids in tree.children.items():
        group = [k for k in kids if k in returns]
        for node_id, advantage in zip(group, trloo([returns[k] for k in group])):
            node = tree.nodes[node_id]
            node.ret = returns[node_id]
            advantage = round(advantage, 9)
            if node.advantage != advantage:
                node.advantage = advantage
                changed[node_id] = advantage
    return changed
