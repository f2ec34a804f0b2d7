"""TRLOO: A_i = G_i − mean of the other siblings' returns; A = G for a group of one."""

import pytest

from search_engine.evaluation.result import EvaluationResult
from search_engine.search.credit import node_returns, trloo, update_credit
from search_engine.search.tree import Node, SearchTree


def test_leave_one_out_formula():
    assert trloo([1.0, 2.0, 3.0]) == pytest.approx([1.0 - 2.5, 2.0 - 2.0, 3.0 - 1.5])


def test_single_member_group_gets_its_return():
    assert trloo([1.7]) == [1.7]
    assert trloo([]) == []


def test_advantages_of_a_group_sum_to_n_over_n_minus_1_times_centered_sum():
    returns = [0.2, 1.1, 0.7, 3.0]
    advantages = trloo(returns)
    mean = sum(returns) / len(returns)
    # A_i = N/(N-1) · (G_i − mean): the leave-one-out baseline is unbiased.
    assert advantages == pytest.approx([len(returns) / 3 * (g - mean) for g in returns])


def _tree(rewards: dict[int, tuple[int | None, float | None]]) -> SearchTree:
    tree = SearchTree()
    for node_id, (parent, reward) in sorted(rewards.items()):
        depth = 0 if parent is None else tree.nodes[parent].depth + 1
        node = Node(node_id, parent, depth, f"src{node_id}")
        if reward is not None:
            node.result = EvaluationResult(status="correct", reward=reward)
        tree.add(node)
    return tree


def test_returns_follow_the_best_child_chain():
    # 0 ─┬─ 1 (r=1) ─┬─ 3 (r=2)
    #    │           └─ 4 (r=0)
    #    └─ 2 (r=1.5)
    tree = _tree({0: (None, None), 1: (0, 1.0), 2: (0, 1.5), 3: (1, 2.0), 4: (1, 0.0)})
    returns = node_returns(tree, gamma=0.5)
    assert returns[3] == 2.0 and returns[4] == 0.0
    assert returns[1] == pytest.approx(1.0 + 0.5 * 2.0)
    assert returns[2] == 1.5


def test_update_credit_sets_advantages_per_sibling_group():
    tree = _tree({0: (None, None), 1: (0, 1.0), 2: (0, 1.5), 3: (1, 2.0), 4: (1, 0.0),
                  5: (2, None)})
    changed = update_credit(tree, gamma=0.5)
    n = tree.nodes
    assert n[3].advantage == pytest.approx(2.0) and n[4].advantage == pytest.approx(-2.0)
    assert n[1].advantage == pytest.approx(2.0 - 1.5) and n[2].advantage == pytest.approx(-0.5)
    assert n[5].advantage is None  # not evaluated: no credit yet
    assert set(changed) == {1, 2, 3, 4}
    assert update_credit(tree, gamma=0.5) == {}  # nothing changed the second time


def test_gamma_zero_scores_each_turn_alone():
    tree = _tree({0: (None, None), 1: (0, 1.0), 2: (0, 1.5), 3: (1, 2.0)})
    update_credit(tree, gamma=0.0)
    assert tree.nodes[1].advantage == pytest.approx(-0.5)
    assert tree.nodes[3].advantage == pytest.approx(2.0)
