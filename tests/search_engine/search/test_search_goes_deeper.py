"""The budget goes where the tree says it pays: when refinements keep improving, the search
follows them deeper, so the winner is deeper than the first child; each node's move record
says what the move did to time and diagnosis.

Timing is a deterministic model of the template's parameters (no GPU) for a latency-bound
softmax: each step down in chunk size or warps is faster, more rows per program is slower,
so the best kernel is several moves below the first child."""

import ast
import re
from concurrent.futures import Future

from search_engine.evaluation.result import EvaluationResult, TimingStats
from search_engine.search import SearchConfig, SearchRunner
from search_engine.search.policies import MCTSPolicy, improved_on_parent
from search_engine.synthesis.offline import OfflineSynthesizer

LONG_SOFTMAX = (
    "import torch\nimport torch.nn as nn\n\n"
    "class Model(nn.Module):\n    def forward(self, x):\n        return torch.softmax(x, dim=-1)\n\n"
    "def get_inputs():\n    return [torch.randn(4, 40000)]\n\n"
    "def get_init_inputs():\n    return []\n")
EAGER_MS = 2.0


def modelled_ms(params: dict) -> float:
    passes = {"online": 1.0, "split": 1.0, "looped": 1.3, "single": 1.0,
              "coop": 1.0}[params["variant"]]
    chunk = {256: 0.6, 512: 0.7, 1024: 0.8, 2048: 0.9, 4096: 1.0, 8192: 1.1,
             16384: 1.2}[params["BLOCK_R"]]
    warps = {1: 0.7, 2: 0.8, 4: 0.9, 8: 1.0, 16: 1.1}[params["num_warps"]]
    return round(passes * chunk * warps * (1.0 + 0.2 * (params["ROWS"] - 1)), 6)


def params_of(source: str) -> dict:
    found = re.search(r"Template parameters: (\[.*?\])\.", source, re.S)
    return dict(ast.literal_eval(found.group(1)))


class ModelledExecutor:
    def __init__(self):
        self.timed = []

    def submit(self, request) -> Future:
        ms = modelled_ms(params_of(request.candidate_source))
        self.timed.append(ms)
        future: Future = Future()
        future.set_result(EvaluationResult(
            status="correct", target="h200", reward=EAGER_MS / ms, coverage=1.0,
            speedup_vs_eager=EAGER_MS / ms, speedup_vs_compile=EAGER_MS / ms / 1.2,
            diagnostics={"bottleneck": {"class": "latency-bound", "reason": "modelled"}},
            timing={"candidate": TimingStats(ms, 0.0, 10, "modelled"),
                    "eager": TimingStats(EAGER_MS, 0.0, 10, "modelled"),
                    "compile": TimingStats(EAGER_MS / 1.2, 0.0, 10, "modelled")}))
        return future


def run(seed: int, **policy):
    runner = SearchRunner(LONG_SOFTMAX, "h200", OfflineSynthesizer(), ModelledExecutor(),
                          SearchConfig(strategy="mcts", budget=12, seed=seed,
                                       policy_options=policy))
    outcome = runner.run()
    assert outcome.status == "completed", outcome.reason
    return runner, outcome


def best_depths(**policy) -> list[int]:
    return [run(seed, **policy)[0].tree.best().depth for seed in range(8)]


def test_improving_chains_are_followed_deeper_than_the_first_child():
    deepening = best_depths()
    assert sum(d > 1 for d in deepening) >= 6  # the winner is a refinement, not a first guess
    # the statistics matter: without following the improving node, the same budget ends
    # shallower
    assert sum(d >= 4 for d in deepening) > sum(d >= 4 for d in best_depths(
        deepen_probability=0.0))


def test_every_move_records_what_it_did():
    runner, outcome = run(0)
    best = runner.tree.best()
    move = best.origin["move"]
    assert move["name"] and move["changed"] and move["parent_id"] == best.parent_id
    effect = move["effect"]
    parent = runner.tree.nodes[best.parent_id]
    assert effect["ms_after"] == best.result.timing["candidate"].median_ms
    if parent.result is not None:
        assert effect["ms_before"] == parent.result.timing["candidate"].median_ms
        assert effect["speedup_vs_parent"] == round(effect["ms_before"] / effect["ms_after"], 4)
    assert effect["diagnosis_after"] == "latency-bound"
    assert effect["improved"] is True
    stored = [n for n in outcome.nodes if n["origin"].get("move", {}).get("effect")]
    assert len(stored) == outcome.evaluated


def test_deepening_picks_the_improving_incumbent_with_room():
    runner, _ = run(1)
    tree = runner.tree
    best = tree.best()
    policy = MCTSPolicy(deepen_probability=1.0, max_children=len(tree.children[best.id]) + 1)
    assert improved_on_parent(tree, best)
    assert policy.improving_frontier(tree).id == best.id
    full = MCTSPolicy(deepen_probability=1.0, max_children=len(tree.children[best.id]))
    assert full.improving_frontier(tree) is None
