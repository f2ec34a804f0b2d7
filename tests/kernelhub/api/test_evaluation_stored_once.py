"""The reward service stores each fact of a result once (headline numbers in columns, the
rest in `result`) and the API still returns exactly the CLI's `--json` object."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps as django_apps

from kernelhub.api.evaluations import HEADLINE, evaluation_store_result
from kernelhub.api.flat import EVALUATIONS
from kernelhub.api.models import Evaluation
from kernelhub.api.serializers import EvaluationSerializer
from search_engine.evaluation.result import EvaluationResult, IntegrityFlag, TimingStats

pytestmark = pytest.mark.django_db

MIGRATION = importlib.import_module(
    "kernelhub.api.migrations.0002_evaluation_headline_stored_once")


def cli_object() -> dict:
    return EvaluationResult(
        status="correct", message="ok", target="interpreter", reward=1.25,
        speedup_vs_eager=None, speedup_vs_compile=None, coverage=0.9,
        speedup_label="interpreter: not comparable",
        timing={"candidate": TimingStats(1.5, 0.1, 5, "interpreter")},
        diagnostics={"bottleneck": {"class": "memory-bound"}},
        integrity_flags=[IntegrityFlag("static.suspicious", "why", "warning")]).to_dict()


@pytest.fixture
def pending(teams, library_problem):
    return Evaluation.objects.create(
        team=teams["alpha"], problem=library_problem, problem_name=library_problem.name,
        problem_source=library_problem.source, candidate_source="x = 1\n",
        target="interpreter")


def test_a_result_is_stored_once_and_served_whole(pending):
    data = cli_object()
    evaluation_store_result(pending.pk, data)
    pending.refresh_from_db()
    assert not set(pending.result) & set(HEADLINE), "a headline fact is stored twice"
    assert (pending.status, pending.reward, pending.coverage) == ("correct", 1.25, 0.9)
    served = EvaluationSerializer(pending).data["result"]
    assert served == data and list(served) == list(data)  # the CLI's keys, in its order
    names = ["status", "reward", "candidate_ms", "timing_method", "bottleneck",
             "integrity_flag_count"]
    row = next(EVALUATIONS.rows(EVALUATIONS.queryset([pending.team_id]), names))
    assert row == ["correct", 1.25, 1.5, "interpreter", "memory-bound", 1]


def test_an_error_is_served_as_the_cli_prints_it(pending):
    evaluation_store_result(pending.pk, {"status": "error", "message": "unknown target"})
    pending.refresh_from_db()
    assert pending.state == Evaluation.State.ERROR and pending.result == {
        "message": "unknown target"}
    assert EvaluationSerializer(pending).data["result"] == {
        "status": "error", "message": "unknown target"}
    assert EvaluationSerializer(Evaluation(state="queued")).data["result"] is None


def test_migration_strips_the_copies_and_back(pending):
    data = cli_object()
    Evaluation.objects.filter(pk=pending.pk).update(  # a row written before: copies in both
        state="done", result=data, status="correct", reward=None)
    MIGRATION.strip_copies(django_apps, None)
    pending.refresh_from_db()
    assert not set(pending.result) & set(HEADLINE) and pending.reward == 1.25
    assert EvaluationSerializer(pending).data["result"] == data
    MIGRATION.restore_copies(django_apps, None)
    pending.refresh_from_db()
    assert pending.result == data
