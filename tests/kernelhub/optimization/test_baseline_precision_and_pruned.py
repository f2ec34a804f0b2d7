"""The web shows what the baselines ran in, and a pruned child with its reason (never
evaluated, not counted)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from kernelhub.optimization.models import Candidate, SearchSession
from kernelhub.optimization.runner import SessionRecorder
from search_engine.evaluation.baseline_precision import BASELINE_PRECISION
from search_engine.evaluation.result import EvaluationResult, TimingStats, TrialError
from search_engine.search.tree import PRUNED, Node

pytestmark = pytest.mark.django_db

STRICT = BASELINE_PRECISION["strict"]
REASON = "pruned.shared_memory: about 327680 bytes of shared memory; the target allows 232448"


def _result() -> EvaluationResult:
    error = {"rel_norm_error": 2e-7, "within_tolerance": True, "tolerance_class": "fp32"}
    return EvaluationResult(
        status="correct", message="ok", target="h200", precision_policy="strict",
        correctness=[TrialError(0, 1, 1e-7, 1e-6, 1e-7, True)],
        timing={"candidate": TimingStats(0.05, 0.001, 50, "cuda_events+l2_flush"),
                "eager": TimingStats(0.1, 0.002, 50, "cuda_events+l2_flush", STRICT,
                                     {"cudnn_allow_tf32": False}, error)},
        speedup_vs_eager=2.0, baseline_precision=STRICT, reward=1.0)


def test_precision_and_pruned_children_reach_the_page(teams, hardware, library_problem,
                                                      client):
    session = SearchSession.objects.create(
        team=teams["alpha"], problem=library_problem, hardware=hardware["h200"],
        status=SearchSession.Status.RUNNING)
    recorder = SessionRecorder(session)
    root = Node(0, None, 0, library_problem.source, {"synthesizer": "reference"},
                status="reference")
    child = Node(1, 0, 1, "class ModelNew: ...\n", {"synthesizer": "offline"})
    pruned = Node(2, 0, 1, "class ModelNew: ... # big\n",
                  {"synthesizer": "offline", "transformation": "stages_up", "pruned": REASON},
                  status=PRUNED)
    for node in (root, child, pruned):
        recorder({"type": "node_created", "payload": node.to_dict()})
    child.result, child.status = _result(), "correct"
    recorder({"type": "node_evaluated", "payload": {**child.to_dict(), "advantages": {}}})

    row = Candidate.objects.get(session=session, node_id="1")
    assert client.login(username="alpha-viewer", password="pw-viewer")
    panel = client.get(reverse("optimization:candidate_diagnostics", args=[row.pk])).json()
    assert panel["baseline_precision"] == STRICT
    page = client.get(reverse("optimization:candidate_detail", args=[row.pk])).content.decode()
    assert f'<span class="baseline-precision">{STRICT}</span>' in page

    stored = Candidate.objects.get(session=session, node_id="2")
    assert stored.status == "pruned" and stored.message == REASON
    session.refresh_from_db()
    assert session.evaluated_count == 1  # the pruned child cost nothing
