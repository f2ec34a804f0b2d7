"""One candidate shape: a node is stored through one mapping, each fact once (columns for
the headline facts, `result` only for the rest), and every reader sees the same facts."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps as django_apps
from django.urls import reverse

from kernelhub import migration_rows
from kernelhub.api.flat import CANDIDATES
from kernelhub.api.serializers import CandidateSerializer
from kernelhub.api.trajectories import trajectory_records
from kernelhub.optimization.candidates import candidate_record, candidate_result
from kernelhub.optimization.models import Candidate, SearchSession
from kernelhub.optimization.runner import SessionRecorder, stored_node_dicts
from search_engine.candidate import FACTS, CandidateRecord
from search_engine.evaluation.result import (
    EvaluationResult, IntegrityFlag, TimingStats, TrialError,
)
from search_engine.search.tree import Node, SearchTree

pytestmark = pytest.mark.django_db

MIGRATION = importlib.import_module(
    "kernelhub.optimization.migrations.0006_candidate_facts_stored_once")


def evaluated_result() -> EvaluationResult:
    return EvaluationResult(
        status="correct", message="ok: 3 trials", target="h200", precision_policy="strict",
        correctness=[TrialError(0, 1, 1e-7, 1e-6, 1e-7, True)],
        timing={"candidate": TimingStats(0.05, 0.001, 50, "cuda_events+l2_flush"),
                "eager": TimingStats(0.1, 0.002, 50, "cuda_events+l2_flush"),
                "compile": TimingStats(0.08, 0.002, 50, "cuda_events+l2_flush")},
        speedup_vs_eager=2.0, speedup_vs_compile=1.6, speedup_label="strict fp32",
        coverage=0.97, reward=1.4, duration_s=3.5,
        diagnostics={"bottleneck": {"class": "memory-bound", "reason": "81% of peak"},
                     "roofline": {"arithmetic_intensity": 0.25, "achieved_tflops": 0.9}},
        integrity_flags=[IntegrityFlag("runtime.timing_floor", "close to floor", "warning")])


@pytest.fixture
def recorded(teams, hardware, library_problem):
    """A root and one evaluated child, stored the way a running search stores them."""
    session = SearchSession.objects.create(
        team=teams["alpha"], problem=library_problem, hardware=hardware["h200"],
        status=SearchSession.Status.RUNNING)
    recorder = SessionRecorder(session)
    root = Node(0, None, 0, library_problem.source, {"synthesizer": "reference"},
                status="reference")
    child = Node(1, 0, 1, "class ModelNew: ...\n",
                 {"synthesizer": "offline", "transformation": "warps_up",
                  "usage": {"prompt_tokens": 0}})
    for node in (root, child):
        recorder({"type": "node_created", "payload": node.to_dict()})
    child.result, child.status, child.advantage = evaluated_result(), "correct", 0.3
    node = child.to_dict()
    recorder({"type": "node_evaluated", "payload": {**node, "advantages": {}}})
    return {"session": session, "node": node,
            "row": Candidate.objects.select_related("parent").get(session=session, node_id="1")}


def test_each_fact_is_stored_once(recorded):
    row, result = recorded["row"], recorded["node"]["result"]
    assert not set(row.result) & set(FACTS), "a fact with a column is also in result"
    assert row.result["correctness"] == result["correctness"]
    assert row.result["speedup_label"] == "strict fp32" and row.result["target"] == "h200"
    for key in FACTS:
        assert getattr(row, key) == result[key], key


def test_the_mapper_composes_the_whole_result_and_the_node_again(recorded):
    row, node = recorded["row"], recorded["node"]
    assert candidate_result(row) == node["result"]
    rebuilt = SearchTree.from_dicts(stored_node_dicts(recorded["session"]))
    assert rebuilt.nodes[1].to_dict()["result"] == node["result"]
    assert rebuilt.nodes[1].advantage == 0.3 and rebuilt.nodes[0].result is None
    assert candidate_record(row) == CandidateRecord.from_node(node)


def test_every_reader_sees_the_same_facts(recorded, client):
    row, session = recorded["row"], recorded["session"]
    live = session.events.filter(type="node_evaluated").last().payload
    assert (live["bottleneck"], live["reason"]) == ("memory-bound", "81% of peak")
    assert live["speedup_vs_eager"] == 2.0 and live["message"] == "ok: 3 trials"

    api = CandidateSerializer(row).data
    assert api["timing"]["candidate"]["median_ms"] == 0.05 and api["tainted"] is False
    assert api["diagnostics"]["bottleneck"]["class"] == "memory-bound"

    names = ["candidate_ms", "eager_ms", "timing_method", "bottleneck", "integrity_flag_count"]
    flat = next(CANDIDATES.rows(CANDIDATES.queryset([session.team_id]).filter(pk=row.pk), names))
    assert flat == [0.05, 0.1, "cuda_events+l2_flush", "memory-bound", 1]

    turn = next(trajectory_records(session))["turns"][0]["result"]
    assert turn["bottleneck"] == "memory-bound" and turn["timing"] == row.timing

    assert client.login(username="alpha-viewer", password="pw-viewer")
    page = client.get(reverse("optimization:candidate_detail", args=[row.pk])).content.decode()
    assert 'id="speedup-label">strict fp32<' in page
    assert '<table id="trials">' in page and "No correctness trial ran" not in page
    panel = client.get(reverse("optimization:candidate_diagnostics", args=[row.pk])).json()
    assert panel["candidate_ms"] == 0.05 and panel["integrity_flags"] == row.integrity_flags


def test_migration_strips_the_copies_and_back(recorded, monkeypatch):
    row, result = recorded["row"], recorded["node"]["result"]
    monkeypatch.setattr(migration_rows, "BATCH", 1)  # every batch boundary is crossed
    # rows written before: the whole result, and a column the old code left empty
    Candidate.objects.filter(pk=row.pk).update(result=result, coverage=None)
    other = Candidate.objects.create(session=recorded["session"], node_id="2", parent=row.parent,
                                     status="correct", result=result)
    MIGRATION.strip_copies(django_apps, None)
    for candidate in (row, other):
        candidate.refresh_from_db()
        assert not set(candidate.result) & set(FACTS) and candidate.coverage == 0.97
    MIGRATION.restore_copies(django_apps, None)
    row.refresh_from_db()
    assert row.result == result
