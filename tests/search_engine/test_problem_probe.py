"""The sandbox's answers about a problem are parsed strictly: anything out of shape is a clear
error, never an exception from deep inside, never code that reaches a generated kernel."""

from __future__ import annotations

import copy
import json

import pytest

from search_engine.problem_check import ProblemInvalid, problem_info_from_json
from search_engine.problem_probe import ProbeFailed, parse_answer
from search_engine.synthesis.base import NotCoveredError
from search_engine.synthesis.offline.frontend.ir import Const
from search_engine.synthesis.offline.frontend.json_io import CoverageUnknown, analysis_to_json
from search_engine.synthesis.offline.plan.classify import analysis_from_json

GRAPH = {
    "nodes": [
        {"id": 0, "op": "input", "operands": [], "attrs": {"index": 0}, "shape": [4, 8],
         "dtype": "float32"},
        {"id": 1, "op": "param", "operands": [], "attrs": {"path": "block.0.bias"},
         "shape": [8], "dtype": "float32"},
        {"id": 2, "op": "add", "operands": [0, 1], "attrs": {}, "shape": [4, 8],
         "dtype": "float32"},
        {"id": 3, "op": "mul", "operands": [2, {"const": 2.0}], "attrs": {}, "shape": [4, 8],
         "dtype": "float32"},
    ],
    "output": 3, "input_count": 1, "op_names": ["add", "mul"], "input_names": ["x"],
    "output_dtype": "torch.float32",
}


def test_parse_answer_refuses_anything_but_one_probe_object():
    ok = json.dumps({"probe": 1, "task": "validate", "ok": True, "info": {}}).encode()
    assert parse_answer(ok, "validate")["ok"] is True
    for raw in (b"", b"\xff\xfe", b"[1, 2]", b'{"probe": 1, ', ok + b"\n" + ok,
                ok.replace(b'"validate"', b'"analyze"'), b'{"probe": 1, "task": "validate"}',
                b'{"probe": 1, "task": "validate", "ok": false, "error": 3}', b"[" * 100_000):
        with pytest.raises(ProbeFailed) as info:
            parse_answer(raw, "validate")
        assert info.value.kind == "malformed"


@pytest.mark.parametrize("info", [
    None, [], {"input_shapes": [[2]], "input_dtypes": ["float32"], "dtype": "float32"},
    {"input_shapes": [[-1]], "input_dtypes": ["float32"], "dtype": "float32",
     "parameter_count": 0},
    {"input_shapes": [[2]], "input_dtypes": ["float32"], "dtype": "x" * 40,
     "parameter_count": 0},
    {"input_shapes": [[2]], "input_dtypes": ["float32"], "dtype": "float32",
     "parameter_count": True},
    {"input_shapes": [[2]], "input_dtypes": ["float32", "int64"], "dtype": "float32",
     "parameter_count": 0},
])
def test_problem_info_is_checked(info):
    with pytest.raises(ProblemInvalid, match="malformed"):
        problem_info_from_json(info)


def test_problem_info_round_trip():
    info = problem_info_from_json({"input_shapes": [[2, 3]], "input_dtypes": ["bfloat16"],
                                   "dtype": "bfloat16", "parameter_count": 12})
    assert info.input_shapes == [[2, 3]] and info.dtype == "bfloat16"


def test_a_graph_round_trips_and_is_classified_here():
    an = analysis_from_json(copy.deepcopy(GRAPH))
    assert an.family == "elementwise" and an.nodes[3].operands[1] == Const(2.0)
    assert analysis_from_json(analysis_to_json(an)).topo() == an.topo()


def mutated(change):
    graph = copy.deepcopy(GRAPH)
    change(graph)
    return graph


@pytest.mark.parametrize("change", [
    lambda g: g.update(output_dtype="torch.float32); import os; os.system('id'"),
    lambda g: g["nodes"][1]["attrs"].update(path="bias; import os"),
    lambda g: g["input_names"].append("x=__import__('os')"),
    lambda g: g["nodes"][2].update(operands=[0, 3]),  # a reference forward: a cycle
    lambda g: g["nodes"][2].update(op="__import__"),
    lambda g: g["nodes"][2].update(dtype="Tensor"),
    lambda g: g["nodes"][2]["attrs"].update(evil=1),
    lambda g: g["nodes"][2].update(shape=[4, "8"]),
    lambda g: g.update(output=99),
    lambda g: g["nodes"].append(g["nodes"][0]),
    lambda g: g["nodes"][3].update(op="sum"),  # a reduction without its attributes
])
def test_a_forged_graph_is_coverage_unknown(change):
    with pytest.raises(CoverageUnknown, match="coverage unknown"):
        analysis_from_json(mutated(change))


def test_the_family_is_recomputed_not_taken_from_the_child():
    two_matmuls = mutated(lambda g: g["nodes"].extend([
        {"id": 4, "op": "matmul", "operands": [3, 3], "attrs": {}, "shape": [4, 4],
         "dtype": "float32"},
        {"id": 5, "op": "matmul", "operands": [4, 4], "attrs": {}, "shape": [4, 4],
         "dtype": "float32"}]) or g.update(output=5, family="elementwise"))
    assert analysis_from_json(two_matmuls).family == "batched_matmul"  # staged, not the
    # child's "elementwise"
