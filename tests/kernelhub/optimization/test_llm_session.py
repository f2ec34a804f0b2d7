"""An LLM session in the web app against the scripted local endpoint: the shared category
vocabulary, tokens, cost and model recorded per candidate and on the session, the cost
budget, an outage that pauses the session (reason and HTTP status stored) and resumes it,
and the candidate page showing exactly what was sent."""

import pytest
from django.urls import reverse

from kernelhub.optimization import runner
from kernelhub.optimization.models import Candidate, SearchSession
from kernelhub.optimization.services import session_create
from search_engine.protocols import ContextPassage
from search_engine.search import categories as cats
from tests.search_engine.synthesis.conftest import FakeLLMServer, chat_reply

pytestmark = pytest.mark.django_db(transaction=True)

KERNEL = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
'''


def answer(tag: str) -> dict:
    return chat_reply(f"```python\n# {tag}\n{KERNEL}```")


class Knowledge:
    def __init__(self, team_id=None):
        self.categories = []

    def retrieve(self, query, hardware=None, categories=None, k=5):
        self.categories.append(categories)
        return [ContextPassage("Use 128-bit loads (PASSAGE-FROM-KB).", "Interpreter guide", 0.8,
                               page=3, metadata={"category": categories[0]})]


@pytest.fixture
def llm(settings, monkeypatch):
    from tests.search_engine.synthesis.test_llm_team import InstantExecutor

    server = FakeLLMServer()
    settings.OPENAI_BASE_URL = server.base_url
    settings.OPENAI_API_KEY = "web-key"
    settings.LLM_CONFIGURED = True
    settings.LLM_MODEL = "team-model"
    settings.KERNELHUB_LLM_PRICES = "team-model=500:1500"  # $0.5 / $1.5 per 1k tokens
    settings.KERNELHUB_LLM_RETRIES = 1
    settings.KERNELHUB_LLM_BACKOFF_S = 0.01
    settings.KERNELHUB_LLM_OUTAGE_RETRY_S = 0.3
    monkeypatch.setattr("kernelhub.placement.evaluation_executor",
                        lambda session_id=None: InstantExecutor())
    monkeypatch.setattr(runner, "make_context_provider", lambda session: Knowledge())
    yield server
    server.close()


def make_session(teams, hardware, problem, **changes):
    options = dict(user=teams["users"][("alpha", "engineer")], team=teams["alpha"],
                   problem=problem, hardware=hardware["interpreter"], budget_evaluations=2,
                   synthesizer="llm", config={"children_per_step": 1, "max_in_flight": 2,
                                              "policy_options": {"restart_probability": 0.0}})
    options.update(changes)
    return session_create(**options)


def test_the_search_and_the_knowledge_base_share_one_category_vocabulary():
    from knowledge.models import Category
    from knowledge.retrieval import _check_categories

    assert set(cats.CATEGORIES) == set(Category.values)
    for need in cats.BY_NEED:
        assert _check_categories(cats.categories_for(need))  # never "Unknown category"


def test_tokens_cost_and_model_are_recorded_and_the_page_shows_what_was_sent(
        llm, teams, hardware, library_problem, client):
    llm.queue(chat_reply("Prose, no code."), chat_reply(""), chat_reply("```python\nx = (\n```"),
              answer("one"), answer("two"))
    session = make_session(teams, hardware, library_problem)
    runner.run_session(session.pk)
    session.refresh_from_db()
    assert session.status == SearchSession.Status.FINISHED, session.status_message
    per_request = (120 * 0.5 + 80 * 1.5) / 1000
    assert session.llm_requests == 5 and session.llm_prompt_tokens == 600
    assert session.llm_cost_usd == pytest.approx(5 * per_request)  # rejected attempts too
    children = Candidate.objects.filter(session=session, parent__isnull=False).order_by("id")
    assert [c.llm_model for c in children] == ["team-model", "team-model"]
    assert all(c.cost_usd == pytest.approx(per_request) and c.prompt_tokens == 120
               for c in children)
    first = children[0]
    assert "elementwise" in first.origin["context_query"]  # the family is known
    client.force_login(teams["users"][("alpha", "viewer")])
    page = client.get(reverse("optimization:candidate_detail", args=[first.pk])).content.decode()
    assert 'id="llm-sent"' in page and "team-model" in page
    assert "PASSAGE-FROM-KB" in page and "Interpreter guide p.3" in page
    assert "You are an expert GPU kernel engineer" in page  # the system message
    assert "web-key" not in page


def test_a_cost_budget_needs_a_price_and_stops_the_session(llm, teams, hardware,
                                                           library_problem, settings):
    llm.queue(*[answer(f"k{i}") for i in range(6)])
    session = make_session(teams, hardware, library_problem, budget_evaluations=6,
                           budget_cost_usd=0.3)
    runner.run_session(session.pk)
    session.refresh_from_db()
    assert "cost limit of $0.3 reached" in session.status_message
    assert session.evaluated_count == 2

    settings.KERNELHUB_LLM_PRICES = ""
    settings.LLM_MODEL = "unpriced-model"
    session = make_session(teams, hardware, library_problem, budget_cost_usd=1.0)
    runner.run_session(session.pk)
    session.refresh_from_db()
    assert session.status == SearchSession.Status.FAILED
    assert "needs a price for unpriced-model" in session.status_message


def test_an_outage_pauses_the_session_with_its_http_status_and_it_resumes(
        llm, teams, hardware, library_problem, monkeypatch):
    stored = []
    real = runner.session_llm_outage

    def spy(session, outage, reason):
        result = real(session, outage, reason)
        session.refresh_from_db()
        stored.append((session.status, dict(session.llm_outage)))
        return result

    monkeypatch.setattr(runner, "session_llm_outage", spy)
    error = {"status": 503, "body": {"error": {"message": "maintenance"}}}
    llm.queue(answer("one"), error, error, answer("two"), answer("three"))
    session = make_session(teams, hardware, library_problem, budget_evaluations=3)
    runner.run_session(session.pk)
    session.refresh_from_db()
    assert session.status == SearchSession.Status.FINISHED, session.status_message
    assert session.evaluated_count == 3 and session.llm_outage == {}
    changes = [e.payload for e in session.events.filter(type="status_changed")]
    paused = [c for c in changes if c["status"] == "paused"]
    assert paused and "HTTP 503" in paused[0]["message"] and "maintenance" in paused[0]["message"]
    after = changes[changes.index(paused[0]) + 1:]
    assert any(c["status"] == "running" and "answers again" in c["message"] for c in after)
    status, outage = stored[0]
    assert status == SearchSession.Status.PAUSED and outage["status_code"] == 503
    assert stored[-1] == (SearchSession.Status.RUNNING, {})
