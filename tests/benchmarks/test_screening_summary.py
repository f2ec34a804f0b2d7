"""`benchmarks/screening_summary.py`: a screening search's numbers, and the table of every
screened configuration (what a measured default table is built from), fastest first."""

from benchmarks.screening_summary import screened_table, summary


def _node(node_id, status, params, screen=None, speedup=None, parent=1):
    origin = {"transformation": f"move{node_id}", "params": params}
    if screen is not None:
        origin["screen"] = screen
    node = {"id": node_id, "parent_id": parent, "status": status, "origin": origin}
    if speedup is not None:
        node.update(result={"message": "ok"}, speedup_vs_eager=speedup, reward=speedup)
    return node


TREE = [
    _node(1, "correct", {"BLOCK": 64}, speedup=1.0, parent=0),
    _node(2, "screened", {"BLOCK": 128}, {"passed": True, "median_ms": 2.0}),
    _node(3, "screened", {"BLOCK": 256}, {"passed": False, "reason": "incorrect: trial 2"}),
    _node(4, "correct", {"BLOCK": 512}, {"passed": True, "median_ms": 1.5, "finalist": True},
          speedup=1.3),
    _node(5, "screened", {"BLOCK": 32}, {"skipped": True, "passed": False}),
]


def test_every_screened_configuration_is_listed_fastest_first_with_its_outcome():
    table = screened_table(TREE)
    assert [row["id"] for row in table] == [4, 2, 3]  # the skipped one was never timed
    assert table[0] == {"id": 4, "parent_id": 1, "transformation": "move4",
                        "params": {"BLOCK": 512}, "screen_ms": 1.5, "passed": True,
                        "reason": None, "status": "correct"}
    assert table[2]["reason"] == "incorrect: trial 2" and table[2]["screen_ms"] is None


def test_the_summary_names_the_best_full_evaluation_and_carries_the_table():
    out = summary(TREE, {"problem": "p", "screened": 3, "evaluated": 2},
                  ["  screened 3 configurations of node 1 in 6.0 s on 2 sandboxes"])
    assert out["best"]["id"] == 4 and out["first"]["id"] == 1
    assert out["best_over_first"] == 1.3
    assert out["screened_per_screening_minute"] == 30.0
    assert len(out["screened_table"]) == 3
