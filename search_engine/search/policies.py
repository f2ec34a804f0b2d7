"""Search policies: which node to expand next, and with which memory view.

MCTS (UCT with progressive widening)
    From the root, descend while the current node already has as many children as it may:
    ``allowed(n) = max(1, ceil(widening_k · visits(n) ** widening_alpha))``. Among children,
    pick the highest ``Q/scale + c · sqrt(ln(visits(parent) + 1) / (visits(child) + 1))``
    where Q is the best reward in the child's subtree (best-reward backpropagation), scale
    the best reward seen so far, and visits count evaluated and in-flight nodes of the
    subtree. Constants: ``exploration`` c = 1.0, ``widening_k`` = 1.0,
    ``widening_alpha`` = 0.5; ``restart_probability`` = 0.1 expands the root afresh.
    Budget goes where the tree's statistics say it pays: with ``deepen_probability`` = 0.5
    the step expands the best clean node when it improved on its parent (or is the best
    first guess) and has fewer than ``max_children`` = 6 children, so an improving chain is
    followed deeper before the budget is spread over siblings.

Evolutionary (islands)
    ``islands`` populations expanded in turn; a parent is chosen by tournament (best of
    ``tournament_size`` random members) or fitness-proportional; with ``crossover_rate``
    (when the synthesizer supports it) a second parent is drawn for crossover. Every
    ``migration_interval`` generations each island's best joins the next island. An island
    without improvement for ``stagnation_limit`` of its evaluations restarts from the global
    best (``restart_from="best"``) or from the root (``"root"``).

Both only look at applied results and pending nodes, so with the loop's ordered mode the
same seed gives the same decisions.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from search_engine.search.tree import PENDING, Node, SearchTree

MEMORY_MODES = ("trajectory", "siblings", "both", "restart")


@dataclass
class Expansion:
    parent_id: int
    memory_mode: str
    second_parent_id: int | None = None
    tags: dict[str, Any] = field(default_factory=dict)  # copied into the children's origin


def _expandable(node: Node) -> bool:
    return node.evaluated or node.id == 0


def _memory_mode(configured: str, rng: random.Random) -> str:
    if configured != "auto":
        return configured
    return rng.choices(["both", "trajectory", "siblings"], weights=[2, 1, 1])[0]


@dataclass
class MCTSPolicy:
    exploration: float = 1.0
    widening_k: float = 1.0
    widening_alpha: float = 0.5
    restart_probability: float = 0.1
    deepen_probability: float = 0.5
    max_children: int = 6
    memory: str = "auto"
    name: str = "mcts"

    def stats(self, tree: SearchTree) -> tuple[dict[int, int], dict[int, float]]:
        """Visits (evaluated + in-flight nodes in the subtree) and best subtree reward."""
        visits: dict[int, int] = {}
        best: dict[int, float] = {}
        for node_id in sorted(tree.nodes, reverse=True):
            node = tree.nodes[node_id]
            kids = tree.children.get(node_id, [])
            visits[node_id] = (1 if node.evaluated or node.status == PENDING else 0) + sum(
                visits[k] for k in kids)
            own = node.reward if node.evaluated else 0.0
            best[node_id] = max([own or 0.0] + [best[k] for k in kids])
        return visits, best

    def allowed_children(self, visits: int) -> int:
        return max(1, math.ceil(self.widening_k * max(visits, 1) ** self.widening_alpha))

    def select(self, tree: SearchTree, rng: random.Random) -> Expansion | None:
        visits, best = self.stats(tree)
        if len(tree.nodes) > 1 and rng.random() < self.restart_probability:
            return Expansion(0, "restart")
        deepen = self.improving_frontier(tree)
        if deepen is not None and rng.random() < self.deepen_probability:
            return Expansion(deepen.id, _memory_mode(self.memory, rng))
        scale = max(best.values()) or 1.0
        node = tree.root
        while True:
            kids = [k for k in tree.kids(node.id) if _expandable(k)]
            room = len(tree.children[node.id]) < self.allowed_children(visits[node.id])
            if room or not kids:
                if node.id == 0:
                    return Expansion(0, "restart")
                return Expansion(node.id, _memory_mode(self.memory, rng))
            log_n = math.log(visits[node.id] + 1)

            def uct(k: Node) -> tuple[float, int]:
                score = best[k.id] / scale + self.exploration * math.sqrt(
                    log_n / (visits[k.id] + 1))
                return (score, -k.id)

            node = max(kids, key=uct)

    def improving_frontier(self, tree: SearchTree) -> Node | None:
        """The best clean node, when it is worth going deeper: it beat its parent (a first
        child: it is the best so far) and still has room for children."""
        best = tree.best()
        if best is None or len(tree.children.get(best.id, [])) >= self.max_children:
            return None
        return best if improved_on_parent(tree, best) else None

    def on_applied(self, tree: SearchTree, node: Node) -> list[str]:
        return []

    def rebuild(self, tree: SearchTree) -> None:
        return None


def improved_on_parent(tree: SearchTree, node: Node) -> bool:
    parent = tree.nodes.get(node.parent_id) if node.parent_id is not None else None
    if not node.is_clean_correct:
        return False
    if parent is None or not parent.is_clean_correct:
        return True
    return (node.reward or 0.0) > (parent.reward or 0.0)


def _candidate_ms(node: Node | None) -> float | None:
    if node is None or node.result is None:
        return None
    stats = node.result.timing.get("candidate")
    return stats.median_ms if stats is not None else None


def _bottleneck(node: Node | None) -> str:
    if node is None or node.result is None:
        return ""
    found = node.result.diagnostics.get("bottleneck", "")
    return found.get("class", "") if isinstance(found, dict) else str(found)


def record_move_effect(tree: SearchTree, node: Node) -> None:
    """Add to the node's move record (origin["move"]) what the move did: time and
    diagnosis before and after, and whether it beat its parent. The tree, its events and
    the skills then show why a node won."""
    move = node.origin.get("move")
    if not isinstance(move, dict) or node.result is None:
        return
    parent = tree.nodes.get(node.parent_id) if node.parent_id is not None else None
    before, after = _candidate_ms(parent), _candidate_ms(node)
    move["effect"] = {
        "status": node.status, "ms_before": before, "ms_after": after,
        "speedup_vs_parent": round(before / after, 4) if before and after else None,
        "reward_before": parent.reward if parent is not None else None,
        "reward_after": node.reward,
        "diagnosis_before": _bottleneck(parent), "diagnosis_after": _bottleneck(node),
        "improved": improved_on_parent(tree, node),
    }


@dataclass
class EvolutionPolicy:
    islands: int = 2
    tournament_size: int = 3
    selection: str = "tournament"  # or "proportional"
    crossover_rate: float = 0.25
    migration_interval: int = 4
    stagnation_limit: int = 6
    restart_from: str = "best"  # or "root"
    memory: str = "trajectory"
    supports_crossover: bool = True
    name: str = "evolution"
    members: dict[int, list[int]] = field(default_factory=dict)
    best_reward: dict[int, float] = field(default_factory=dict)
    since_improvement: dict[int, int] = field(default_factory=dict)
    generation: int = 0

    def __post_init__(self) -> None:
        if self.selection not in ("tournament", "proportional"):
            raise ValueError("selection must be 'tournament' or 'proportional'")
        if self.restart_from not in ("best", "root"):
            raise ValueError("restart_from must be 'best' or 'root'")
        for island in range(self.islands):
            self.members.setdefault(island, [])
            self.best_reward.setdefault(island, float("-inf"))
            self.since_improvement.setdefault(island, 0)

    def _pick(self, tree: SearchTree, pool: list[int], rng: random.Random) -> int:
        if self.selection == "proportional":
            weights = [max(tree.nodes[i].reward or 0.0, 0.0) + 1e-3 for i in pool]
            return rng.choices(pool, weights=weights)[0]
        contenders = rng.sample(pool, min(self.tournament_size, len(pool)))
        return max(contenders, key=lambda i: (tree.nodes[i].reward or 0.0, -i))

    def select(self, tree: SearchTree, rng: random.Random) -> Expansion | None:
        island = self.generation % self.islands
        self.generation += 1
        logs = self.maybe_migrate(tree)
        pool = [i for i in self.members[island] if tree.nodes[i].evaluated]
        tags = {"island": island, "generation": self.generation, "logs": logs}
        if not pool:
            return Expansion(0, "restart", tags=tags)
        parent = self._pick(tree, pool, rng)
        second = None
        if self.supports_crossover and len(pool) > 1 and rng.random() < self.crossover_rate:
            others = [i for i in pool if i != parent]
            second = self._pick(tree, others, rng)
        return Expansion(parent, self.memory, second_parent_id=second, tags=tags)

    def maybe_migrate(self, tree: SearchTree) -> list[str]:
        if self.islands < 2 or self.generation % max(1, self.migration_interval):
            return []
        logs = []
        for island in range(self.islands):
            pool = [i for i in self.members[island] if tree.nodes[i].evaluated]
            if not pool:
                continue
            champion = max(pool, key=lambda i: (tree.nodes[i].reward or 0.0, -i))
            target = (island + 1) % self.islands
            if champion not in self.members[target]:
                self.members[target].append(champion)
                logs.append(f"migration: node {champion} from island {island} to {target}")
        return logs

    def on_applied(self, tree: SearchTree, node: Node) -> list[str]:
        island = node.origin.get("island")
        if island is None or island not in self.members:
            return []
        if node.id not in self.members[island]:
            self.members[island].append(node.id)
        reward = node.reward or 0.0
        if reward > self.best_reward[island] + 1e-9:
            self.best_reward[island] = reward
            self.since_improvement[island] = 0
            return []
        self.since_improvement[island] += 1
        if self.since_improvement[island] < self.stagnation_limit:
            return []
        self.since_improvement[island] = 0
        self.best_reward[island] = float("-inf")
        best = tree.best()
        if self.restart_from == "best" and best is not None:
            self.members[island] = [best.id]
            return [f"island {island} stagnated: restarted from the best node {best.id}"]
        self.members[island] = []
        return [f"island {island} stagnated: restarted from the root"]

    def rebuild(self, tree: SearchTree) -> None:
        for island in self.members:
            self.members[island] = []
        for node in sorted(tree.nodes.values(), key=lambda n: n.id):
            island = node.origin.get("island")
            if island in self.members and node.evaluated:
                self.on_applied(tree, node)
            elif island in self.members:
                self.members[island].append(node.id)
        self.generation = max((n.origin.get("generation", 0) for n in tree.nodes.values()),
                              default=0)


def make_policy(name: str, **options: Any):
    if name == "mcts":
        return MCTSPolicy(**options)
    if name in ("evolution", "evolutionary"):
        return EvolutionPolicy(**options)
    raise ValueError(f"unknown strategy {name!r}; known: mcts, evolution")
