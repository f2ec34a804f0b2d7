"""Issue 29 on the launch form: configurations screened per expansion (blank = the target's
default) and finalists reach `session.config` and the search loop; bad values get a clear
error and store nothing."""

from __future__ import annotations

import html

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from kernelhub.optimization import services
from kernelhub.optimization.models import SearchSession
from kernelhub.optimization.runner import make_search_config
from kernelhub.optimization.services import session_create
from search_engine.search.config import GPU_SCREEN

from .test_views_new_session import form_data, login

pytestmark = pytest.mark.django_db


@pytest.fixture
def launch(client, teams, hardware, library_problem, monkeypatch):
    """launch(**fields): post the form as alpha's engineer (the loop is not started)."""
    monkeypatch.setattr(services, "session_start", lambda session: None)
    login(client, "alpha", "engineer")

    def post(target: str = "interpreter", **fields):
        data = form_data(hardware, team=teams["alpha"].pk, problem=library_problem.pk, **fields)
        data["hardware"] = hardware[target].pk
        return client.post(reverse("optimization:session_new"), data)

    return post


def test_the_form_offers_screening_and_says_what_it_is(client, teams, hardware):
    login(client, "alpha", "engineer")
    page = html.unescape(client.get(reverse("optimization:session_new")).content.decode())
    assert 'name="screen"' in page and 'name="screen_finalists"' in page
    assert "Configurations screened per expansion" in page and "Finalists per expansion" in page
    assert "Only the fastest (the finalists) get the full evaluation" in page
    assert f"Blank = auto: off on the interpreter, {GPU_SCREEN} on a GPU" in page
    assert page.count('name="budget_minutes"') == 1  # the time budget is the one that exists


def test_screening_and_minutes_from_the_form_reach_the_loop(launch):
    response = launch(screen=2, screen_finalists=1, budget_minutes=3)
    assert response.status_code == 302, response.content.decode()[:2000]
    session = SearchSession.objects.get()
    assert session.config == {"screen": 2, "screen_finalists": 1}
    config = make_search_config(session)
    assert (config.screen, config.screen_finalists, config.max_seconds) == (2, 1, 180.0)


@pytest.mark.parametrize("target, fields, expected", [
    ("interpreter", {}, 0),  # blank: the target's default
    ("h200", {"screen": "", "screen_finalists": ""}, GPU_SCREEN),
    ("h200", {"screen": 0}, 0),  # 0 is "off", not "auto"
])
def test_blank_is_the_targets_default_and_zero_is_off(launch, target, fields, expected):
    response = launch(target, **fields)
    assert response.status_code == 302, response.content.decode()[:2000]
    session = SearchSession.objects.get()
    assert "screen_finalists" not in session.config
    assert make_search_config(session).screen == expected


@pytest.mark.parametrize("fields, words", [
    ({"screen": -1}, "Configurations screened cannot be negative (0 turns screening off)."),
    ({"screen": "many"}, "Configurations screened: enter a whole number, or leave it blank"),
    ({"screen": 5000}, "Configurations screened: at most 1024 per expansion."),
    ({"screen": 8, "screen_finalists": 0}, "Finalists: at least 1"),
    ({"screen": 2, "screen_finalists": 5},
     "Finalists (5) cannot exceed the configurations screened (2)."),
])
def test_bad_screening_gets_a_clear_error_and_stores_nothing(launch, fields, words):
    response = launch(**fields)
    page = html.unescape(response.content.decode())
    assert response.status_code == 400 and words in page, page[-3000:]
    assert not SearchSession.objects.exists()


@pytest.mark.parametrize("config, words", [
    ({"screen": -3}, "between 0 and 1024"),
    ({"screen": "64"}, "whole number"),
    ({"screen_finalists": 0}, "between 1 and 64"),
    ({"screen": 4, "screen_finalists": 8}, "cannot exceed"),
])
def test_the_service_refuses_bad_screening_from_any_entry_point(teams, hardware,
                                                                library_problem, config, words):
    with pytest.raises(ValidationError, match=words):
        session_create(user=teams["users"][("alpha", "engineer")], team=teams["alpha"],
                       problem=library_problem, hardware=hardware["interpreter"], config=config)
    assert not SearchSession.objects.exists()
