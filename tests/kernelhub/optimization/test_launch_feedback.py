"""Issue 32 item 4: no long wait without feedback. A session whose problem is not checked
yet says so (the state the page, dashboard and API share); coverage checks start for every
problem without anyone opening it."""

from __future__ import annotations

import hashlib

import pytest
from django.urls import reverse

from kernelhub.optimization import services
from kernelhub.optimization.models import Problem, SearchSession
from kernelhub.optimization.session_state import session_state

pytestmark = pytest.mark.django_db


def make_problem(source: str, name: str, team=None, covered: bool = False) -> Problem:
    sha = hashlib.sha256(source.encode()).hexdigest()
    extra = {"offline_coverage_state": "covered", "offline_coverage_sha256": sha,
             "offline_coverage_detail": "covered (template family: elementwise)"} if covered else {}
    return Problem.objects.create(name=name, source=source, source_sha256=sha, team=team, **extra)


def make_session(teams, hardware, problem, synthesizer="offline") -> SearchSession:
    return SearchSession.objects.create(team=teams["alpha"], problem=problem,
                                        hardware=hardware["interpreter"], synthesizer=synthesizer)


def test_an_offline_session_with_an_unchecked_problem_is_checking_it(
        teams, hardware, tiny_problem_source, settings):
    settings.KERNELHUB_EXECUTOR = "local"
    problem = make_problem(tiny_problem_source, "unchecked")
    state = session_state(make_session(teams, hardware, problem))
    assert state.state == "checking_problem" and state.waiting
    assert "unchecked" in state.detail and state.label == "checking the problem"
    assert session_state(make_session(teams, hardware, problem, "llm")).state == "running"
    checked = make_problem(tiny_problem_source, "checked", covered=True)
    assert session_state(make_session(teams, hardware, checked)).state == "running"


def test_the_api_gives_the_checking_state(client, teams, hardware, tiny_problem_source,
                                          settings):
    settings.KERNELHUB_EXECUTOR = "local"
    session = make_session(teams, hardware, make_problem(tiny_problem_source, "unchecked"))
    client.force_login(teams["users"][("alpha", "viewer")])
    body = client.get(f"/api/v1/sessions/{session.pk}/").json()
    assert body["state"] == "checking_problem" and "offline synthesizer" in body["state_detail"]


def test_pending_problems_are_asked_for_once_and_checked_ones_never(
        teams, tiny_problem_source, django_capture_on_commit_callbacks):
    make_problem(tiny_problem_source, "a")
    make_problem(tiny_problem_source, "b")
    make_problem(tiny_problem_source, "c", covered=True)
    with django_capture_on_commit_callbacks() as queued:
        assert services.problems_offline_coverage_request_pending() == 2
        assert services.problems_offline_coverage_request_pending() == 0  # already asked
    assert len(queued) == 2
    assert Problem.objects.filter(offline_coverage_requested_at__isnull=False).count() == 2


def test_the_problem_list_asks_for_problems_beyond_its_page(
        client, teams, tiny_problem_source, django_capture_on_commit_callbacks):
    for i in range(30):
        make_problem(tiny_problem_source, f"p{i:02d}")
    make_problem(tiny_problem_source, "other-team", team=teams["beta"])
    client.login(username="alpha-viewer", password="pw-viewer")
    with django_capture_on_commit_callbacks() as queued:
        page = client.get(reverse("problem_list")).content.decode()
    assert "page 1 of 2" in page and len(queued) == 30  # page 2's too; never beta's
    assert not Problem.objects.get(name="other-team").offline_coverage_requested_at


def test_the_new_session_form_asks_for_the_problems_it_offers(
        client, teams, tiny_problem_source, django_capture_on_commit_callbacks):
    make_problem(tiny_problem_source, "lib")
    make_problem(tiny_problem_source, "team-one", team=teams["alpha"])
    client.login(username="alpha-engineer", password="pw-engineer")
    with django_capture_on_commit_callbacks() as queued:
        assert client.get(reverse("optimization:session_new")).status_code == 200
    assert len(queued) == 2


def test_the_embedded_server_asks_again_at_start_for_checks_that_died_with_it(
        teams, tiny_problem_source, django_capture_on_commit_callbacks):
    from django.utils import timezone

    lost = make_problem(tiny_problem_source, "asked-before-a-restart")
    Problem.objects.filter(pk=lost.pk).update(offline_coverage_requested_at=timezone.now())
    make_problem(tiny_problem_source, "never-asked")
    make_problem(tiny_problem_source, "checked", covered=True)
    with django_capture_on_commit_callbacks() as queued:
        assert services.problems_offline_coverage_resume() == 2
    assert len(queued) == 2


@pytest.mark.parametrize("enabled", [True, False])
def test_the_server_start_hook_starts_the_checks_in_a_thread_only_where_enabled(
        enabled, settings, monkeypatch):
    """A server process starts them; a process that imports the ASGI module for in-process
    clients (the tests) starts nothing: its thread would race the suite's collection."""
    import threading

    from kernelhub.optimization import problem_services

    settings.KERNELHUB_EXECUTOR = "local"
    settings.KERNELHUB_COVERAGE_CHECKS_ON_START = enabled
    ran = threading.Event()
    monkeypatch.setattr(problem_services, "_resume_coverage_checks", ran.set)
    problem_services.coverage_checks_on_server_start()
    assert ran.wait(5 if enabled else 0.2) is enabled


def test_a_test_process_does_not_ask_for_checks_at_start_by_default():
    from django.conf import settings

    assert settings.KERNELHUB_COVERAGE_CHECKS_ON_START is False
