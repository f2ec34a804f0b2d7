"""MCTS (UCT + progressive widening + best-reward backup) and island evolution."""

import random

from search_engine.evaluation.result import EvaluationResult
from search_engine.search.policies import EvolutionPolicy, MCTSPolicy, make_policy
from search_engine.search.tree import Node, SearchTree

import pytest


def _tree(spec):
    tree = SearchTree()
    for node_id, parent, reward in spec:
        depth = 0 if parent is None else tree.nodes[parent].depth + 1
        node = Node(node_id, parent, depth, f"s{node_id}", {"island": None})
        if reward is not None:
            node.result = EvaluationResult(status="correct", reward=reward)
            node.status = "correct"
        elif node_id == 0:
            node.status = "reference"
        tree.add(node)
    return tree


def test_progressive_widening_grows_with_visits():
    policy = MCTSPolicy(widening_k=1.0, widening_alpha=0.5)
    assert [policy.allowed_children(v) for v in (0, 1, 4, 9, 10)] == [1, 1, 2, 3, 4]


def test_mcts_expands_root_first_then_descends_to_best_subtree():
    policy = MCTSPolicy(restart_probability=0.0, exploration=0.0, memory="trajectory")
    tree = _tree([(0, None, None)])
    first = policy.select(tree, random.Random(0))
    assert first.parent_id == 0 and first.memory_mode == "restart"
    # root has 2 visits' worth of children → widening allows 2 children at 4 visits
    tree = _tree([(0, None, None), (1, 0, 1.0), (2, 0, 2.0), (3, 2, 0.5)])
    visits, best = policy.stats(tree)
    assert visits[0] == 3 and visits[2] == 2
    assert best[2] == 2.0 and best[0] == 2.0  # best reward backed up, not the mean
    choice = policy.select(tree, random.Random(0))
    assert choice.parent_id in (2, 3)  # pure exploitation follows the best subtree


def test_mcts_exploration_visits_less_visited_children():
    policy = MCTSPolicy(restart_probability=0.0, exploration=5.0, widening_k=0.5)
    tree = _tree([(0, None, None), (1, 0, 1.0), (2, 0, 1.0), (3, 1, 1.0), (4, 1, 1.0),
                  (5, 3, 1.0)])
    choice = policy.select(tree, random.Random(0))
    assert choice.parent_id == 2  # equal rewards: the unexplored branch wins


def test_mcts_restart_probability():
    policy = MCTSPolicy(restart_probability=1.0)
    tree = _tree([(0, None, None), (1, 0, 1.0)])
    assert policy.select(tree, random.Random(0)).memory_mode == "restart"


def test_evolution_islands_take_turns_and_seed_from_root():
    policy = EvolutionPolicy(islands=2)
    tree = _tree([(0, None, None)])
    a, b = policy.select(tree, random.Random(0)), policy.select(tree, random.Random(1))
    assert (a.parent_id, a.memory_mode, a.tags["island"]) == (0, "restart", 0)
    assert (b.parent_id, b.tags["island"]) == (0, 1)


def test_tournament_picks_the_fittest_of_the_sample():
    policy = EvolutionPolicy(islands=1, tournament_size=10, crossover_rate=0.0)
    tree = _tree([(0, None, None), (1, 0, 0.5), (2, 0, 2.0), (3, 0, 1.0)])
    for node_id in (1, 2, 3):
        tree.nodes[node_id].origin["island"] = 0
        policy.on_applied(tree, tree.nodes[node_id])
    assert policy.select(tree, random.Random(0)).parent_id == 2


def test_crossover_draws_a_second_parent():
    policy = EvolutionPolicy(islands=1, crossover_rate=1.0)
    tree = _tree([(0, None, None), (1, 0, 0.5), (2, 0, 2.0)])
    for node_id in (1, 2):
        tree.nodes[node_id].origin["island"] = 0
        policy.on_applied(tree, tree.nodes[node_id])
    choice = policy.select(tree, random.Random(0))
    assert choice.second_parent_id is not None and choice.second_parent_id != choice.parent_id


def test_migration_moves_the_champion_to_the_next_island():
    policy = EvolutionPolicy(islands=2, migration_interval=1)
    tree = _tree([(0, None, None), (1, 0, 2.0)])
    tree.nodes[1].origin["island"] = 0
    policy.on_applied(tree, tree.nodes[1])
    choice = policy.select(tree, random.Random(0))
    assert any("migration: node 1" in line for line in choice.tags["logs"])
    assert 1 in policy.members[1]


@pytest.mark.parametrize("restart_from,expected", [("best", [2]), ("root", [])])
def test_stagnant_island_restarts(restart_from, expected):
    policy = EvolutionPolicy(islands=2, stagnation_limit=2, restart_from=restart_from)
    tree = _tree([(0, None, None), (1, 0, 1.0), (2, 0, 3.0), (3, 1, 0.5), (4, 1, 0.5)])
    tree.nodes[2].origin["island"] = 1
    policy.on_applied(tree, tree.nodes[2])
    logs = []
    for node_id in (1, 3, 4):
        tree.nodes[node_id].origin["island"] = 0
        logs += policy.on_applied(tree, tree.nodes[node_id])
    assert any("stagnated" in line for line in logs)
    assert policy.members[0] == expected


def test_unknown_strategy_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown strategy"):
        make_policy("beam")
