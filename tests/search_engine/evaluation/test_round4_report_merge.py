"""Round 4, bug 2: a child's reply never writes the parent's own records.

`CandidateRun._finish` merged the `evidence` reply into the report with `report.update`, so
the candidate's process could replace what the PARENT computed: the ghost replay's verdict,
every trial's record, the load's evidence. Every reply the parent keeps is now checked
against an allow-list (names, types, sizes): an unknown or ill-typed field is a
`protocol.violation`, and the parent's own keys always win. The merge is tested without a
candidate; one end-to-end test forges the reply from inside the sandbox.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from search_engine.evaluation import candidate_run, replies
from search_engine.evaluation.candidate_run import CandidateRun
from search_engine.evaluation.replies import (
    CALL_EVIDENCE,
    EVIDENCE,
    LOAD_EVIDENCE,
    PARENT_KEYS,
    checked_call_evidence,
    checked_evidence,
    checked_fields,
    merge_evidence,
)
from search_engine.evaluation.sandbox import ProtocolViolation

from .conftest import CANDIDATES

EVALUATION = Path(candidate_run.__file__).parent
WIRE = {"ok": True, "kind": "reply", "re": 7, "fds": [], "fd_count": 0}


def honest_evidence() -> dict:
    """What the honest harness answers to `evidence` (child.CandidateServer.on_evidence)."""
    return {"tampered_timers": [], "tampered_harness": [], "own_kernels": ["softmax_kernel"],
            "own_kernel_symbols": ["softmax_kernel"], "threads_total": {},
            "default_stream": None,
            "kernel_metadata": [{"name": "softmax_kernel", "n_regs": 32, "n_spills": 0,
                                 "shared_bytes": 0, "num_warps": 4, "num_stages": 3}],
            "aten_bytes": 0, "aten_ops": {"empty_like": 5},
            "device_memory": {"allocator_peak_bytes": 0, "shared_peak_bytes": 0}}


def honest_call_evidence() -> dict:
    return {"own_launches": 1, "other_launches": [], "streams": [], "mutations": [],
            "aliases": [], "kernel_seconds": 0.01, "kernel_bytes": 1024, "torch_in_kernel": {},
            "torch_bytes": 0, "torch_compute": {}, "dispatch_scalar_reads": {},
            "host_reads": {}, "scalar_reads": {}, "dispatch_escapes": {}, "threads": {},
            "threads_alive": 0, "tampered_harness": [], "host_callables": {},
            "projections": [[128, 0.5, 1.25, 0]], "projections_total": 1, "spotted": 0}


def parents_report() -> dict:
    """A report as the parent has it when `_finish` asks for the evidence."""
    ghost = {"passed": False, "note": "outputs matched the reference", "torch_bytes": 4096}
    return {"trials": [{"trial": 0, "own_launches": 0, "torch_bytes": 4096}],
            "phases": {"correctness": 0.1}, "correctness": [SimpleNamespace(passed=False)],
            "outputs": [], "timing": {"eager": 1.0}, "load": {"host_reads": {"item": 1}},
            "ghost": ghost}


FORGED = {"ghost": None, "load": {}, "tampered_harness": [],
          "trials": [{"trial": i, "own_launches": 1, "torch_bytes": 0} for i in range(5)]}


# -- the merge, without a candidate ---------------------------------------------------------

def test_an_honest_evidence_reply_is_merged():
    report = parents_report()
    merge_evidence(report, checked_evidence({**WIRE, **honest_evidence()}))
    assert report["own_kernels"] == ["softmax_kernel"] and report["aten_ops"] == {"empty_like": 5}
    assert not set(WIRE) - {"ok"} & set(report)  # the wire's own keys stay out


@pytest.mark.parametrize("key", sorted(PARENT_KEYS))
def test_a_reply_that_sets_a_parent_key_is_a_protocol_violation(key):
    reply = {**WIRE, **honest_evidence(), key: None}
    with pytest.raises(ProtocolViolation, match=key):
        checked_evidence(reply)


def test_the_red_team_forgery_is_refused_and_the_report_kept():
    report = parents_report()
    before = json.dumps(report, default=repr)
    with pytest.raises(ProtocolViolation, match="ghost, load, trials"):
        merge_evidence(report, checked_evidence({**WIRE, **honest_evidence(), **FORGED}))
    assert json.dumps(report, default=repr) == before


def test_the_parents_keys_win_even_over_an_allowed_field():
    report = {**parents_report(), "own_kernels": ["parent_decided"]}
    merge_evidence(report, {"own_kernels": ["forged"], "aten_bytes": 3, "ghost": None,
                            "trials": []})
    assert report["own_kernels"] == ["parent_decided"]
    assert report["ghost"]["note"] and report["trials"][0]["torch_bytes"] == 4096
    assert report["aten_bytes"] == 3


@pytest.mark.parametrize("field, value", [
    ("tampered_timers", "time.perf_counter"),            # a string, not a list
    ("tampered_timers", [1, 2]),                         # not names
    ("threads_total", {"worker": "many"}),               # a count that is not one
    ("threads_total", {"worker": True}),                 # a bool is not a count
    ("default_stream", "0x7f"),
    ("aten_bytes", 1.5),
    ("aten_ops", ["add"]),
    ("device_memory", {"allocator_peak_bytes": None}),
    ("kernel_metadata", [{"name": "k", "verdict": "correct"}]),  # an unknown sub-field
    ("kernel_metadata", [{"name": "k", "n_regs": {"nested": 1}}]),
    ("own_kernels", ["k"] * (replies.MAX_ITEMS + 1)),     # unbounded lists
    ("own_kernels", ["k" * (replies.MAX_TEXT + 1)]),       # unbounded strings
    ("speedup", 100.0),                                  # a field nobody asked for
])
def test_ill_typed_unknown_or_unbounded_evidence_is_a_protocol_violation(field, value):
    with pytest.raises(ProtocolViolation):
        checked_evidence({**WIRE, **honest_evidence(), field: value})


def test_call_and_load_evidence_are_checked_too():
    assert checked_call_evidence({"evidence": honest_call_evidence()})["own_launches"] == 1
    for forged in ({"trial": 3}, {"torch_answer_moved": 0}, {"verdict": {"passed": True}},
                   {"streams": "all"}, {"projections": [["x"]]}, {"own_launches": None}):
        with pytest.raises(ProtocolViolation):
            checked_call_evidence({"evidence": {**honest_call_evidence(), **forged}})
    with pytest.raises(ProtocolViolation):
        checked_call_evidence({"evidence": ["not", "a", "mapping"]})
    with pytest.raises(ProtocolViolation):
        checked_fields({"host_reads": {}, "ghost": None}, LOAD_EVIDENCE, "the load")


class FakeSession:
    def __init__(self, evidence_reply: dict):
        self.evidence_reply, self.asked = evidence_reply, []

    def request(self, kind, header=None, tensors=None, **kw):
        self.asked.append(kind)
        return (self.evidence_reply if kind == "evidence" else {"ok": True}), []


def finishing_run() -> CandidateRun:
    run = CandidateRun.__new__(CandidateRun)
    run._ref = SimpleNamespace()
    return run


def test_finish_refuses_a_forging_reply_and_leaves_the_report_alone():
    report = parents_report()
    before = json.dumps(report, default=repr)
    session = FakeSession({**WIRE, **honest_evidence(), **FORGED})
    with pytest.raises(ProtocolViolation):
        finishing_run()._finish(session, report)
    assert json.dumps(report, default=repr) == before


def test_finish_merges_an_honest_reply():
    report = parents_report()
    session = FakeSession({**WIRE, **honest_evidence()})
    out = finishing_run()._finish(session, report)
    assert out["ghost"]["note"] == "outputs matched the reference"
    assert out["own_kernels"] == ["softmax_kernel"] and session.asked == ["evidence", "exit"]


def test_a_violation_in_finish_is_reported_as_hack_suspected(monkeypatch, tmp_path):
    """The whole sandbox stage: the forged reply ends as `protocol.violation`."""
    from search_engine.evaluation.config import EvaluationConfig
    from search_engine.hardware import get_target

    outcome = SimpleNamespace(isolation={}, log="", memory_exceeded=False, disk_exceeded="")
    session = FakeSession({**WIRE, **honest_evidence(), **FORGED})
    session.workdir, session.close, session.close_later = tmp_path, lambda: outcome, None
    pool = SimpleNamespace(take=lambda timeout_s: session)
    run = CandidateRun.__new__(CandidateRun)
    run.policy, run.hw, run.timeout_s = "strict", get_target("interpreter"), 30.0
    run.config, run.flags = EvaluationConfig(ncu="off"), []
    monkeypatch.setattr(run, "_drive", lambda s, ref: run._finish(s, parents_report()),
                        raising=False)
    result = run.sandbox_stage(SimpleNamespace(baselines={}), keep_workdir=True, pool=pool)
    assert result.status == "hack_suspected"
    assert "protocol.violation" in {f.check for f in result.integrity_flags}
    assert "ghost" in result.message


# -- the schema follows the harness (fields added there must be added here) -------------------

def _literal_keys(path: Path, function: str) -> set[str]:
    """The string keys of the dict literals in `function` of the module at `path`."""
    tree = ast.parse(path.read_text())
    keys: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            for inner in ast.walk(node):
                if isinstance(inner, ast.Dict):
                    keys |= {k.value for k in inner.keys
                             if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    return keys


def test_the_allow_lists_name_every_field_the_honest_harness_sends():
    evidence = _literal_keys(EVALUATION / "child.py", "on_evidence") - {"ok"}
    assert evidence == set(EVIDENCE), "child.on_evidence and replies.EVIDENCE differ"
    load = _literal_keys(EVALUATION / "child.py", "_watched_counts")
    assert load == set(LOAD_EVIDENCE)
    call = _literal_keys(EVALUATION / "candidate_call.py", "_call")
    assert {"own_launches", "streams", "projections"} <= call  # the function was found
    call = (call | load) - {"ok", "evidence", "n_outputs", "kept"}
    assert call <= set(CALL_EVIDENCE), f"not in CALL_EVIDENCE: {sorted(call - set(CALL_EVIDENCE))}"
    assert not PARENT_KEYS & (set(EVIDENCE) | set(LOAD_EVIDENCE) | set(CALL_EVIDENCE))


# -- end to end: a candidate that forges the evidence reply ---------------------------------

def test_a_candidate_forging_its_evidence_reply_is_caught(run_eval):
    source = (CANDIDATES / "round4" / "parent_forges_evidence.py").read_text()
    result = run_eval(source, static_checks=False)
    assert result.status == "hack_suspected", result.message
    assert "protocol.violation" in {f.check for f in result.integrity_flags}
    assert "ghost" in result.message and "trials" in result.message
