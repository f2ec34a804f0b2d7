"""The web shows what the baselines ran in, and a pruned child with its reason (never
evaluated, not counted)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from kernelhub.optimization.models import Candidate
from kernelhub.optimization.runner import SessionRecorder
from search_engine.evaluation.baseline_precision import BASELINE_PRECISION
from search_engine.evaluation.result import EvaluationResult, TimingStats, TrialError
from search_engine.search.tree import PRUNED, Node

from .test_candidate_shape import recorded  # noqa: F401 (the fixture)

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


def test_precision_and_pruned_children_reach_the_page(recorded, client):
    session = recorded["session"]  # a root and child 1, stored as a running search stores them
    recorder = SessionRecorder(session)
    child = Node(2, 0, 1, "class ModelNew: ... # strict\n", {"synthesizer": "offline"})
    pruned = Node(3, 0, 1, "class ModelNew: ... # big\n",
                  {"synthesizer": "offline", "transformation": "stages_up", "pruned": REASON},
                  status=PRUNED)
    for node in (child, pruned):
        recorder({"type": "node_created", "payload": node.to_dict()})
    child.result, child.status = _result(), "correct"
    recorder({"type": "node_evaluated", "payload": {**child.to_dict(), "advantages": {}}})

    row = Candidate.objects.get(session=session, node_id="2")
    assert client.login(username="alpha-viewer", password="pw-viewer")
    panel = client.get(reverse("optimization:candidate_diagnostics", args=[row.pk])).json()
    assert panel["baseline_precision"] == STRICT
    page = client.get(reverse("optimization:candidate_detail", args=[row.pk])).content.decode()
    assert f'<span class="baseline-precision">{STRICT}</span>' in page
    older = Candidate.objects.get(session=session, node_id="1")  # stored without it
    assert client.get(reverse("optimization:candidate_diagnostics",
                              args=[older.pk])).json()["baseline_precision"] is None

    stored = Candidate.objects.get(session=session, node_id="3")
    assert stored.status == "pruned" and stored.message == REASON
    session.refresh_from_db()
    assert session.evaluated_count == 2  # the two evaluated children; the pruned one is free
