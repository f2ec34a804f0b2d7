"""The new-session form names the session's LLM models; the session page shows its LLM use
(tokens, cost, models) and an endpoint outage."""

from __future__ import annotations

import pytest
from django.urls import reverse

from kernelhub.optimization import services
from kernelhub.optimization.models import SearchSession

from .test_views_new_session import form_data, login

pytestmark = pytest.mark.django_db


@pytest.fixture
def llm_on(settings, monkeypatch):
    settings.LLM_CONFIGURED = True
    calls = []
    monkeypatch.setattr(services, "session_start", lambda session: calls.append(session.pk))
    return calls


def test_llm_models_are_stored_on_the_session(client, teams, hardware, library_problem, llm_on):
    login(client, "alpha", "engineer")
    page = client.get(reverse("optimization:session_new")).content.decode()
    assert 'name="llm_models"' in page
    response = client.post(reverse("optimization:session_new"), form_data(
        hardware, team=teams["alpha"].pk, problem=library_problem.pk, synthesizer="llm",
        llm_models="gpt-4o-mini, qwen2.5-coder@http://127.0.0.1:9/v1"))
    assert response.status_code == 302, response.content.decode()[:2000]
    session = SearchSession.objects.get()
    assert session.config["llm_models"] == "gpt-4o-mini, qwen2.5-coder@http://127.0.0.1:9/v1"


@pytest.mark.parametrize("bad, words", [
    ("gpt-4o@ftp://host", "not an http(s) endpoint"),
    ("rm -rf /", "not a model name"),
])
def test_bad_model_lists_get_a_clear_error(client, teams, hardware, library_problem, llm_on,
                                           bad, words):
    login(client, "alpha", "engineer")
    response = client.post(reverse("optimization:session_new"), form_data(
        hardware, team=teams["alpha"].pk, problem=library_problem.pk, synthesizer="llm",
        llm_models=bad))
    assert response.status_code == 400 and words in response.content.decode()
    assert not SearchSession.objects.exists()


def test_session_page_shows_llm_use_and_outage(client, teams, hardware, library_problem, llm_on):
    login(client, "alpha", "engineer")
    client.post(reverse("optimization:session_new"), form_data(
        hardware, team=teams["alpha"].pk, problem=library_problem.pk, synthesizer="llm",
        llm_models="gpt-4o-mini"))
    session = SearchSession.objects.get()
    SearchSession.objects.filter(pk=session.pk).update(
        llm_prompt_tokens=1200, llm_completion_tokens=340, llm_requests=3, llm_cost_usd=0.0021,
        llm_outage={"status_code": 503, "error": "Service Unavailable", "retry_in_s": 60})
    page = client.get(reverse("optimization:session_detail", args=[session.pk])).content.decode()
    assert "1200 in · 340 out · 3 requests" in page
    assert "gpt-4o-mini" in page
    assert "LLM endpoint unavailable (HTTP 503): Service Unavailable" in page
    assert "retries by itself in 60 s" in page
