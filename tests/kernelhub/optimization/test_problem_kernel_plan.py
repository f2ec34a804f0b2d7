"""The problem page shows the kernel plan the coverage check stored (issue 28): each kernel's
pattern, ops and fused epilogue, or what is refused and why; nothing for a source whose
coverage is not known yet. The page only reads what the background check stored."""

from __future__ import annotations

import hashlib

import pytest
from django.urls import reverse

from kernelhub.optimization import tasks
from kernelhub.optimization.models import Problem
from kernelhub.optimization.selectors import problem_kernel_plan

MEDIAN = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.median(torch.relu(x), dim=1).values

def get_inputs():
    return [torch.randn(3, 5)]

def get_init_inputs():
    return []
'''


def login(client, team, role="viewer"):
    assert client.login(username=f"{team}-{role}", password=f"pw-{role}")


def page_of(client, problem) -> str:
    response = client.get(reverse("problem_detail", args=[problem.pk]))
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.django_db
def test_the_problem_page_shows_the_stored_kernel_plan(client, teams, library_problem):
    login(client, "alpha")
    assert 'id="kernel-plan"' not in page_of(client, library_problem)  # not checked yet
    assert tasks.problem_coverage_task(library_problem.pk) == "covered"
    library_problem.refresh_from_db()
    plan = library_problem.offline_coverage_plan
    assert plan["covered"] is True and plan["family"] == "elementwise"
    assert [(k["kernel"], k["pattern"], k["ops"]) for k in plan["kernels"]] == [
        ("fused_elementwise_kernel", "pointwise", ["relu", "mul"])]
    html = page_of(client, library_problem)
    shown = html[html.index('id="kernel-plan"'):]
    assert 'data-pattern="pointwise"' in shown
    assert "<code>fused_elementwise_kernel</code> <strong>pointwise</strong>: relu → mul" in shown


@pytest.mark.django_db
def test_the_problem_page_shows_why_the_plan_refuses_a_problem(client, teams):
    problem = Problem.objects.create(name="median", source=MEDIAN, team=teams["alpha"],
                                     source_sha256=hashlib.sha256(MEDIAN.encode()).hexdigest())
    assert tasks.problem_coverage_task(problem.pk) == "uncovered"
    problem.refresh_from_db()
    assert problem.offline_coverage_plan["refused"]["ops"] == ["median"]
    login(client, "alpha")
    html = page_of(client, problem)
    refused = html[html.index('class="kernel-plan-refused"'):]
    assert "median" in refused[:refused.index("</p>")]
    assert 'data-pattern="refused"' in html


@pytest.mark.django_db
def test_a_plan_for_an_older_source_is_not_shown(client, teams, library_problem):
    tasks.problem_coverage_task(library_problem.pk)
    library_problem.refresh_from_db()
    assert problem_kernel_plan(library_problem)["family"] == "elementwise"
    Problem.objects.filter(pk=library_problem.pk).update(source_sha256="0" * 64)  # edited
    library_problem.refresh_from_db()
    assert problem_kernel_plan(library_problem) is None
    login(client, "alpha")
    assert 'id="kernel-plan"' not in page_of(client, library_problem)


@pytest.mark.django_db
def test_an_answer_stored_before_plans_is_checked_again_for_its_plan(teams, library_problem,
                                                                     monkeypatch):
    import importlib

    from django.apps import apps

    from kernelhub import placement
    from kernelhub.optimization import problem_services

    migration = importlib.import_module(
        "kernelhub.optimization.migrations.0009_recheck_coverage_for_plans")
    tasks.problem_coverage_task(library_problem.pk)
    Problem.objects.filter(pk=library_problem.pk).update(offline_coverage_plan={},
                                                         offline_coverage_requested_at=None)
    migration.recheck_answers_without_a_plan(apps, None)
    queued = []
    monkeypatch.setattr(placement, "problem_coverage", queued.append)
    problem_services.problems_offline_coverage_request_pending()
    assert queued == [library_problem.pk]
    problem_services.problem_offline_coverage_compute(library_problem.pk)
    library_problem.refresh_from_db()
    assert problem_kernel_plan(library_problem)["family"] == "elementwise"
    migration.recheck_answers_without_a_plan(apps, None)  # answered with its plan: left alone
    library_problem.refresh_from_db()
    assert problem_kernel_plan(library_problem) is not None


@pytest.mark.django_db
@pytest.mark.parametrize("synthesizer, shown", [("offline", True), ("llm", False)])
def test_an_offline_candidates_page_shows_its_problems_plan(client, teams, hardware,
                                                           library_problem, synthesizer, shown):
    from kernelhub.optimization.models import Candidate, SearchSession

    tasks.problem_coverage_task(library_problem.pk)
    session = SearchSession.objects.create(team=teams["alpha"], problem=library_problem,
                                           hardware=hardware["interpreter"],
                                           synthesizer=synthesizer)
    candidate = Candidate.objects.create(session=session, node_id="1", status="correct",
                                         source="# kernel\n")
    login(client, "alpha")
    response = client.get(reverse("optimization:candidate_detail", args=[candidate.pk]))
    html = response.content.decode()
    assert response.status_code == 200
    assert ('id="kernel-plan"' in html) is shown
    if shown:
        assert "<code>fused_elementwise_kernel</code> <strong>pointwise</strong>" in html
