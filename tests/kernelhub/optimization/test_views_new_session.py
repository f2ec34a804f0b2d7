"""The new-session form: pick or upload a problem, offline coverage, budgets, start."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from kernelhub.optimization import services
from kernelhub.optimization.models import Problem, SearchSession

pytestmark = pytest.mark.django_db

UNCOVERED_PROBLEM = (Path(__file__).parents[2] / "sorter_problem.py").read_text()


@pytest.fixture
def started(monkeypatch):
    calls = []
    monkeypatch.setattr(services, "session_start", lambda session: calls.append(session.pk))
    return calls


def login(client, team, role):
    assert client.login(username=f"{team}-{role}", password=f"pw-{role}")


def form_data(hardware, **extra):
    data = {"team": "", "strategy": "mcts", "synthesizer": "offline", "precision_policy": "strict",
            "hardware": hardware["interpreter"].pk, "budget_evaluations": 6,
            "budget_minutes": 5, "budget_cost_usd": 0, "seed": 0}
    data.update(extra)
    return data


def test_launch_with_a_library_problem_starts_the_session(client, teams, hardware,
                                                          library_problem, started):
    login(client, "alpha", "engineer")
    page = client.get(reverse("optimization:session_new")).content.decode()
    assert library_problem.name in page and 'value="llm"' not in page  # no LLM configured
    response = client.post(reverse("optimization:session_new"), form_data(
        hardware, team=teams["alpha"].pk, problem=library_problem.pk, strategy="evolution"))
    session = SearchSession.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("optimization:session_detail", args=[session.pk])
    assert session.team == teams["alpha"] and session.strategy == "evolution"
    assert session.budget_evaluations == 6 and session.hardware.name == "interpreter"
    assert started == [session.pk]


def test_upload_validates_and_stores_the_problem(client, teams, hardware, tiny_problem_source,
                                                 started):
    login(client, "alpha", "engineer")
    upload = SimpleUploadedFile("my_relu.py", tiny_problem_source.encode())
    response = client.post(reverse("optimization:session_new"),
                           form_data(hardware, team=teams["alpha"].pk, problem_file=upload))
    assert response.status_code == 302, response.content.decode()[:2000]
    problem = Problem.objects.get(name="my_relu")
    assert problem.team == teams["alpha"]
    assert SearchSession.objects.get().problem == problem and len(started) == 1


def test_invalid_upload_gets_a_clear_message_and_stores_nothing(client, teams, hardware, started):
    login(client, "alpha", "engineer")
    upload = SimpleUploadedFile(
        "broken.py", b"import torch\nclass Model(torch.nn.Module):\n    pass\n")
    response = client.post(reverse("optimization:session_new"),
                           form_data(hardware, team=teams["alpha"].pk, problem_file=upload))
    page = response.content.decode()
    assert response.status_code == 400 and 'id="upload-error"' in page
    assert "get_inputs" in page
    assert not Problem.objects.exists() and not SearchSession.objects.exists() and not started


def test_binary_upload_is_refused_clearly(client, teams, hardware, started):
    login(client, "alpha", "engineer")
    upload = SimpleUploadedFile("weights.py", b"\xff\xfe\x00\x81binary")
    response = client.post(reverse("optimization:session_new"),
                           form_data(hardware, team=teams["alpha"].pk, problem_file=upload))
    assert response.status_code == 400 and "not UTF-8 text" in response.content.decode()


def test_no_problem_at_all_is_refused(client, teams, hardware, started):
    login(client, "alpha", "engineer")
    response = client.post(reverse("optimization:session_new"),
                           form_data(hardware, team=teams["alpha"].pk))
    assert response.status_code == 400
    assert "Pick a problem or upload one" in response.content.decode()


def test_bad_budget_keeps_the_other_fields(client, teams, hardware, library_problem, started):
    login(client, "alpha", "engineer")
    response = client.post(reverse("optimization:session_new"), form_data(
        hardware, team=teams["alpha"].pk, problem=library_problem.pk, budget_evaluations=0,
        seed=42))
    page = response.content.decode()
    assert response.status_code == 400 and "Budget: evaluations" in page
    assert 'value="42"' in page and not SearchSession.objects.exists()


def test_an_uncovered_upload_launches_at_once_and_its_loop_fails_it_saying_why(
        client, teams, hardware, started):
    """The launch never waits for the coverage analysis (issue 32 item 4): the session page
    says what it waits on, and the loop's first step ends it with the reason."""
    login(client, "alpha", "engineer")
    upload = SimpleUploadedFile("sorter.py", UNCOVERED_PROBLEM.encode())
    response = client.post(reverse("optimization:session_new"),
                           form_data(hardware, team=teams["alpha"].pk, problem_file=upload))
    session = SearchSession.objects.get()
    assert response.status_code == 302 and started == [session.pk]
    page = client.get(response["Location"]).content.decode()
    assert 'id="checking-problem"' in page and "checking whether the offline synthesizer" in page
    assert services.session_check_offline_coverage(session) is False  # the loop's first step
    session.refresh_from_db()
    assert session.status == "failed"
    assert "offline synthesizer does not cover this problem" in session.status_message
    assert "sort" in session.status_message and "LLM synthesizer" in session.status_message
    # The validated upload is kept, so the user can pick it with another synthesizer; now
    # that its answer is known, a second offline launch is refused up front.
    problem = Problem.objects.get(name="sorter")
    again = client.post(reverse("optimization:session_new"),
                        form_data(hardware, team=teams["alpha"].pk, problem=problem.pk))
    assert again.status_code == 400
    assert "offline synthesizer does not cover this problem" in again.content.decode()
    assert SearchSession.objects.count() == 1


def launch_library_problem(client, teams, hardware, problem) -> SearchSession:
    login(client, "alpha", "engineer")
    client.post(reverse("optimization:session_new"), form_data(
        hardware, team=teams["alpha"].pk, problem=problem.pk))
    return SearchSession.objects.get()


def test_a_covered_problem_checked_by_the_loop_lets_the_search_start(
        client, teams, hardware, library_problem, started):
    session = launch_library_problem(client, teams, hardware, library_problem)
    assert session.status_message.startswith("checking whether")
    assert services.session_check_offline_coverage(session) is True
    session.refresh_from_db()
    assert session.status == "queued" and "covered" in session.status_message
    page = client.get(reverse("optimization:session_detail", args=[session.pk])).content.decode()
    assert 'id="checking-problem"' not in page


def test_a_session_cancelled_during_the_check_stays_cancelled(
        client, teams, hardware, library_problem, started):
    session = launch_library_problem(client, teams, hardware, library_problem)
    services.session_cancel(SearchSession.objects.get(pk=session.pk),
                            teams["users"][("alpha", "engineer")])
    assert services.session_check_offline_coverage(session) is False
    session.refresh_from_db()
    assert session.status == "cancelled"


def test_coverage_partial(client, teams, library_problem, django_capture_on_commit_callbacks):
    from kernelhub.optimization.tasks import problem_coverage_task

    login(client, "alpha", "viewer")
    url = reverse("optimization:problem_coverage") + f"?problem={library_problem.pk}"
    with django_capture_on_commit_callbacks() as queued:  # computed in the background
        page = client.get(url).content.decode()
    assert 'data-state="pending"' in page and "hx-trigger" in page and len(queued) == 1
    problem_coverage_task(library_problem.pk)  # what the background task runs
    page = client.get(url).content.decode()
    assert 'data-state="covered"' in page and "elementwise" in page
    empty = client.get(reverse("optimization:problem_coverage") + "?problem=").content.decode()
    assert "Pick a library or team problem" in empty


def test_llm_synthesizer_offered_when_configured(client, teams, settings):
    settings.LLM_CONFIGURED = True
    login(client, "alpha", "engineer")
    assert 'value="llm"' in client.get(reverse("optimization:session_new")).content.decode()


def test_team_problems_of_other_teams_are_not_offered(client, teams, hardware, tiny_problem_source):
    import hashlib

    foreign = Problem.objects.create(team=teams["beta"], name="beta-secret",
                                     source=tiny_problem_source,
                                     source_sha256=hashlib.sha256(b"x").hexdigest())
    login(client, "alpha", "engineer")
    assert "beta-secret" not in client.get(reverse("optimization:session_new")).content.decode()
    response = client.post(reverse("optimization:session_new"),
                           form_data(hardware, team=teams["alpha"].pk, problem=foreign.pk))
    assert response.status_code == 400 and not SearchSession.objects.exists()
