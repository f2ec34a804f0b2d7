"""Trajectory export for RL trainers: one JSON Lines record per root-to-leaf chain.

Each turn is one node of the chain after the root (the root is the reference, not a
model turn): the prompt, the response (LLM) or the transformation (offline templates), the
evaluation result, its reward, the return G and the TRLOO advantage, computed as the
search does (`search_engine.search.credit`): the group is the node's siblings (samples
made from the same parent), G = r + γ·max over evaluated children of G, and
A_i = G_i − mean_{j≠i} G_j (A = G for a group of one). `chain_return` is the discounted
sum of rewards along this particular chain. `dropped_by_profiling` says whether the
profiling-based lazy-optimization check rejects the turn (status `rejected_lazy`, or a
correct kernel whose custom-kernel coverage is under the threshold τ); `rejection` gives
the same verdict with the coverage and the τ it was judged by.

LLM turns carry what a trainer's off-policy correction needs: `model`, `sampling` (the
request's temperature, max_tokens, seed, logprobs options), `response` (the whole sampled
answer) and `logprobs` ({"tokens", "logprobs"} of that answer; None when the endpoint
returned none). `skills` names the skills that shaped the turn.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Iterator

from kernelhub.optimization.models import SearchSession
from search_engine.evaluation.config import EvaluationConfig
from search_engine.search.credit import DEFAULT_GAMMA, trloo

FIELDS = ("id", "node_id", "parent_id", "depth", "source", "origin", "status", "message",
          "reward", "speedup_vs_eager", "speedup_vs_compile", "coverage", "timing",
          "diagnostics", "integrity_flags")


def _returns(nodes: dict[int, dict], children: dict[int | None, list[int]], gamma: float
             ) -> dict[int, float]:
    returns: dict[int, float] = {}
    for pk in sorted(nodes, reverse=True):  # children are created after their parents
        node = nodes[pk]
        if node["reward"] is None:
            continue
        kids = [returns[c] for c in children.get(pk, []) if c in returns]
        returns[pk] = float(node["reward"]) + (gamma * max(kids) if kids else 0.0)
    return returns


def _advantages(children, returns) -> dict[int, tuple[float, int]]:
    advantage: dict[int, tuple[float, int]] = {}
    for kids in children.values():
        group = [k for k in kids if k in returns]
        for pk, value in zip(group, trloo([returns[k] for k in group])):
            advantage[pk] = (round(value, 9), len(group))
    return advantage


def _dropped(node: dict, threshold: float) -> bool:
    if node["status"] == "rejected_lazy":
        return True
    return (node["status"] == "correct" and node["coverage"] is not None
            and node["coverage"] < threshold)


def _rejection(node: dict, default_tau: float) -> dict:
    """Profiling-based rejection of one turn: the verdict, the coverage and τ behind it (τ
    the evaluation recorded, else the evaluator's default)."""
    tau = (node["diagnostics"] or {}).get("lazy_threshold", default_tau)
    return {"dropped": _dropped(node, tau), "coverage": node["coverage"], "tau": tau,
            "rule": "status rejected_lazy, or correct with coverage < tau"}


def _turn(index: int, node: dict, nodes, returns, advantages, threshold) -> dict:
    origin = node["origin"] or {}
    synthesizer = origin.get("synthesizer", "")
    bottleneck = (node["diagnostics"] or {}).get("bottleneck")
    advantage, group_size = advantages.get(node["id"], (None, 0))
    parent = nodes.get(node["parent_id"])
    rejection = _rejection(node, threshold)
    llm = synthesizer == "llm"
    return {
        "turn": index,
        "node_id": node["node_id"],
        "candidate_id": node["id"],
        "parent_node_id": parent["node_id"] if parent else None,
        "synthesizer": synthesizer,
        "prompt": origin.get("prompt", ""),
        "response": origin.get("response") or (node["source"] if llm else None),
        "model": origin.get("model") or (origin.get("params") or {}).get("model") if llm else None,
        "sampling": origin.get("sampling") or None if llm else None,
        "logprobs": origin.get("logprobs") if llm else None,
        "skills": origin.get("skills") or [],
        "transformation": None if synthesizer == "llm" else {
            "name": origin.get("transformation"), "params": origin.get("params", {})},
        "source": node["source"],
        "result": {
            "status": node["status"], "message": node["message"][:500],
            "speedup_vs_eager": node["speedup_vs_eager"],
            "speedup_vs_compile": node["speedup_vs_compile"], "coverage": node["coverage"],
            "bottleneck": bottleneck.get("class") if isinstance(bottleneck, dict) else bottleneck,
            "integrity_flags": node["integrity_flags"], "timing": node["timing"],
        },
        "reward": node["reward"],
        "return": returns.get(node["id"]),
        "advantage": advantage,
        "group_size": group_size,
        "dropped_by_profiling": rejection["dropped"],
        "rejection": rejection,
    }


def trajectory_records(session: SearchSession, gamma: float = DEFAULT_GAMMA) -> Iterator[dict]:
    rows = session.candidates.order_by("id").values(*FIELDS)
    nodes = {row["id"]: row for row in rows}
    children: dict[int | None, list[int]] = defaultdict(list)
    for row in nodes.values():
        children[row["parent_id"]].append(row["id"])
    returns = _returns(nodes, children, gamma)
    advantages = _advantages(children, returns)
    threshold = EvaluationConfig().lazy_threshold
    leaves = [pk for pk in nodes if not children.get(pk) and nodes[pk]["parent_id"] is not None]
    for leaf in leaves:
        chain = [leaf]
        while nodes[chain[-1]]["parent_id"] in nodes:
            chain.append(nodes[chain[-1]]["parent_id"])
        chain.reverse()
        turns_nodes = [nodes[pk] for pk in chain if nodes[pk]["parent_id"] is not None]
        turns = [_turn(i + 1, n, nodes, returns, advantages, threshold)
                 for i, n in enumerate(turns_nodes)]
        chain_return, discount = 0.0, 1.0
        for turn in turns:
            chain_return += discount * (turn["reward"] or 0.0)
            discount *= gamma
        yield {
            "session_id": session.pk,
            "problem": session.problem.name,
            "family": session.problem.family,
            "hardware": session.hardware.name,
            "precision_policy": session.precision_policy,
            "gamma": gamma,
            "lazy_threshold": threshold,
            "chain": [nodes[pk]["node_id"] for pk in chain],
            "chain_return": round(chain_return, 9),
            "turns": turns,
        }


def trajectory_lines(session: SearchSession, gamma: float = DEFAULT_GAMMA) -> Iterator[str]:
    for record in trajectory_records(session, gamma):
        yield json.dumps(record, default=str) + "\n"
