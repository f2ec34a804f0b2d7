"""CandidateRecord: one shape for a node and its evaluation, each fact in one field."""

from search_engine.candidate import FACTS, CandidateRecord, bottleneck_of
from search_engine.evaluation.result import EvaluationResult, IntegrityFlag, TimingStats
from search_engine.search.tree import Node, SearchTree


def evaluated_node() -> Node:
    result = EvaluationResult(
        status="incorrect", message="x" * 5000, target="interpreter", reward=0.1,
        timing={"candidate": TimingStats(2.0, 0.1, 3, "interpreter")},
        diagnostics={"bottleneck": "memory-bound"},  # an old result's bare string
        integrity_flags=[IntegrityFlag("static.forbidden_import", "imports os")])
    return Node(2, 0, 1, "src", {"transformation": "t", "usage": {"cost_usd": 0.5}},
                status="incorrect", result=result, advantage=-0.2)


def test_facts_are_fields_and_details_hold_only_the_rest():
    node = evaluated_node().to_dict()
    record = CandidateRecord.from_node(node)
    assert not set(record.details) & set(FACTS)
    assert record.details["target"] == "interpreter" and "correctness" in record.details
    assert (record.status, record.reward, record.advantage) == ("incorrect", 0.1, -0.2)
    assert record.timing["candidate"]["median_ms"] == 2.0 and record.bottleneck == "memory-bound"
    assert record.usage == {"cost_usd": 0.5} and len(record.message) == 4000


def test_the_record_rebuilds_the_node():
    node = evaluated_node().to_dict()
    rebuilt = CandidateRecord.from_node(node).to_node()
    assert {**rebuilt["result"], "message": node["result"]["message"]} == node["result"]
    root = CandidateRecord.from_node(Node(0, None, 0, "ref", status="reference").to_dict())
    assert root.result() is None and not root.evaluated
    tree = SearchTree.from_dicts([root.to_node(), rebuilt])
    assert tree.nodes[2].result.integrity_flags[0].check == "static.forbidden_import"


def test_bottleneck_of_reads_both_shapes():
    assert bottleneck_of({"bottleneck": {"class": "compute-bound", "reason": "r"}}) == {
        "class": "compute-bound", "reason": "r"}
    assert bottleneck_of({"bottleneck": "latency"}) == {"class": "latency"}
    assert bottleneck_of(None) == {} and bottleneck_of({}) == {}
