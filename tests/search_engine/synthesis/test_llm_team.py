"""The LLM synthesizer as a team with an endpoint uses it, against the scripted local endpoint:
context that arrives (shared categories, the family, passages and skills with their source),
cost that counts (prices, every attempt's tokens, the cost budget), outages that pause and
resume, synthesis beside evaluation, size caps and prompts fitted to the context, and
several models behind a bandit."""

import argparse
import random
import threading
import time
from concurrent.futures import Future

import pytest

from search_engine.evaluation.result import EvaluationResult, TimingStats
from search_engine.hardware import get_target
from search_engine.protocols import ContextPassage
from search_engine.search import SearchConfig, SearchRunner
from search_engine.search.categories import CATEGORIES
from search_engine.search.loop import context_query
from search_engine.synthesis.bandit import ModelBandit
from search_engine.synthesis.base import MemoryView, NodeView, SynthesisRequest
from search_engine.synthesis.endpoints import make_llm_synthesizer, model_setting
from search_engine.synthesis.llm import SYSTEM_PROMPT, LLMConfig, LLMSynthesizer, build_prompt
from search_engine.synthesis.pricing import parse_prices, price_for

from .conftest import FakeLLMServer, chat_reply, library_source
from .test_llm_synthesizer import fenced, softmax_kernel

SOFTMAX = library_source("softmax")
PER_REQUEST = (120 * 0.5 + 80 * 1.5) / 1000  # chat_reply's tokens at the test prices


def synthesizer(server, **changes):
    options = dict(base_url=server.base_url, model="test-model", api_key="test-key",
                   timeout_s=5.0, backoff_s=0.01, usd_per_1k_prompt_tokens=0.5,
                   usd_per_1k_completion_tokens=1.5)
    options.update(changes)
    return LLMSynthesizer(LLMConfig(**options))


class InstantExecutor:
    """Every candidate is correct (reward grows with each), after `delay_s` in a thread."""

    def __init__(self, delay_s: float = 0.0):
        self.delay_s, self.count = delay_s, 0

    def submit(self, request):
        self.count += 1
        reward = 1.0 + self.count / 10
        future = Future()

        def finish():
            time.sleep(self.delay_s)
            future.set_result(EvaluationResult(
                status="correct", reward=reward, message="scripted verdict",
                timing={"eager": TimingStats(0.1, 0.0, 10, "cuda_events")}))
        threading.Thread(target=finish, daemon=True).start()
        return future

    def shutdown(self):
        pass


def config(**changes):
    base = dict(budget=2, children_per_step=1, max_in_flight=2, seed=0,
                policy_options={"restart_probability": 0.0})
    base.update(changes)
    return SearchConfig(**base)


def good(tag, **tokens):
    return chat_reply(fenced(softmax_kernel(tag)), **tokens)


class KnowledgeDouble:
    def __init__(self):
        self.calls = []

    def retrieve(self, query, hardware=None, categories=None, k=5):
        self.calls.append((query, categories))
        return [
            ContextPassage("Coalesce loads along the row (MANUAL-PASSAGE).", "H200 tuning guide",
                           0.91, page=12, section="Memory",
                           metadata={"category": "hardware-specific"}),
            ContextPassage("Keep the whole row in one program (SKILL-PASSAGE).",
                           "skill: Fuse the row", 0.5, section="softmax", kind="skill",
                           metadata={"transformation": "fuse_row"}),
        ]


# -- context that arrives ------------------------------------------------------------------

@pytest.mark.parametrize("status,diag", [
    ("compile_error", {}), ("runtime_error", {}), ("timeout", {}), ("incorrect", {}),
    ("rejected_lazy", {}), ("correct", {"bottleneck": {"class": "memory-bound"}}),
    ("correct", {"bottleneck": {"class": "compute-bound"}}),
    ("correct", {"bottleneck": {"class": "latency-bound"}}), ("correct", {}),
])
def test_every_query_asks_for_categories_the_knowledge_base_has(status, diag):
    view = NodeView(1, "", {}, status, diagnostics=diag, coverage=0.9)
    query, categories = context_query(view, "softmax", get_target("h200"))
    assert categories and set(categories) <= set(CATEGORIES)


def test_passages_and_skills_reach_the_prompt_with_their_source_and_the_family_is_known(
        llm_server):
    llm_server.queue(good("one"), good("two"))
    knowledge = KnowledgeDouble()
    outcome = SearchRunner(SOFTMAX, "interpreter", synthesizer(llm_server), InstantExecutor(),
                           config(), context=knowledge).run()
    assert outcome.evaluated == 2
    query, categories = knowledge.calls[0]
    assert "softmax" in query and "for  on" not in query  # the family, always
    prompt = llm_server.prompts()[0]
    assert "MANUAL-PASSAGE" in prompt and "SKILL-PASSAGE" in prompt
    assert "H200 tuning guide p.12 \u00a7 Memory (manual, hardware-specific" in prompt
    assert "skill: Fuse the row (skill, family softmax, transformation fuse_row" in prompt
    # the node keeps exactly what was sent: the candidate page shows it
    origin = outcome.nodes[1]["origin"]
    assert origin["prompt"] == prompt
    assert origin["sent"]["system"] == SYSTEM_PROMPT
    assert llm_server.requests[0]["body"]["messages"][0]["content"] == SYSTEM_PROMPT
    assert [p["text"] for p in origin["context"]] == [
        "Coalesce loads along the row (MANUAL-PASSAGE).",
        "Keep the whole row in one program (SKILL-PASSAGE)."]
    assert origin["context"][0]["source"].startswith("H200 tuning guide p.12")


# -- cost that counts ------------------------------------------------------------------------

def test_prices_come_from_the_table_and_overrides():
    assert price_for("gpt-4o-mini").usd_per_1m_prompt == 0.15
    assert price_for("gpt-4o-2024-08-06").usd_per_1m_completion == 10.0  # dated name
    assert price_for("openai/gpt-4o-mini").known
    assert not price_for("my-local-model").known
    overrides = parse_prices("my-local-model=0:0, gpt-4o=1:2")
    assert price_for("my-local-model", overrides).known
    assert price_for("gpt-4o", overrides).usd_per_1m_prompt == 1.0
    assert price_for("anything", parse_prices("3:4")).usd_per_1m_completion == 4.0
    with pytest.raises(ValueError, match="MODEL=PROMPT:COMPLETION"):
        parse_prices("gpt-4o=cheap")
    config_ = LLMConfig.priced("http://x/v1", "gpt-4o-mini")
    assert config_.usd_per_1k_prompt_tokens == pytest.approx(0.15 / 1000)


def test_rejected_attempts_are_paid_for_and_counted(llm_server):
    llm_server.queue(chat_reply("I would use shared memory."), chat_reply(""),
                     chat_reply("```python\nclass ModelNew(:\n```"), good("ok"))
    events = []
    outcome = SearchRunner(SOFTMAX, "interpreter", synthesizer(llm_server), InstantExecutor(),
                           config(budget=1), on_event=events.append).run()
    assert outcome.evaluated == 1
    assert outcome.cost_usd == pytest.approx(4 * PER_REQUEST)
    assert outcome.usage["requests"] == 4 and outcome.usage["failed_requests"] == 3
    assert outcome.usage["prompt_tokens"] == 480
    [failed] = [e["payload"] for e in events if e["type"] == "synthesis_failed"]
    assert failed["usage"]["requests"] == 3 and not failed["transient"]
    assert failed["usage"]["cost_usd"] == pytest.approx(3 * PER_REQUEST)
    assert outcome.nodes[1]["origin"]["usage"]["cost_usd"] == pytest.approx(PER_REQUEST)
    assert outcome.nodes[1]["origin"]["model"] == "test-model"


def test_the_cost_budget_stops_the_search(llm_server):
    llm_server.queue(*[good(f"k{i}") for i in range(10)])
    outcome = SearchRunner(SOFTMAX, "interpreter", synthesizer(llm_server), InstantExecutor(),
                           config(budget=10, max_cost_usd=0.3)).run()
    assert "cost limit of $0.3 reached" in outcome.reason
    assert outcome.evaluated == 2 and outcome.cost_usd == pytest.approx(2 * PER_REQUEST)


def _optimize_args(*argv):
    from search_engine.search.cli_commands import register_optimize

    parser = argparse.ArgumentParser()
    register_optimize(parser.add_subparsers())
    return parser.parse_args(["optimize", "--problem", "p.py", "--synthesizer", "llm",
                              "--llm-base-url", "http://127.0.0.1:9/v1", *argv])


def test_cli_prices_models_and_refuses_a_budget_it_cannot_count(monkeypatch):
    from search_engine.search.cli_commands import make_synthesizer

    for name in ("LLM_MODEL", "KERNELHUB_LLM_MODEL", "OPENAI_MODEL", "KERNELHUB_LLM_PRICES"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="--max-cost needs a price for my-model"):
        make_synthesizer(_optimize_args("--llm-model", "my-model", "--max-cost", "1"))
    syn = make_synthesizer(_optimize_args("--llm-model", "my-model", "--max-cost", "1",
                                          "--llm-price", "my-model=2:8", "--llm-timeout", "7"))
    assert syn.config.usd_per_1k_completion_tokens == pytest.approx(0.008)
    assert syn.config.timeout_s == 7.0
    monkeypatch.setenv("KERNELHUB_LLM_MODEL", "gpt-4o")  # an alias of LLM_MODEL
    assert make_synthesizer(_optimize_args()).config.model == "gpt-4o"
    monkeypatch.setenv("LLM_MODEL", "gpt-4.1-mini")
    assert make_synthesizer(_optimize_args()).config.model == "gpt-4.1-mini"
    assert model_setting({"OPENAI_MODEL": "o3-mini"}) == "o3-mini"


# -- outages pause, not end; synthesis beside evaluation ---------------------------------------

def test_an_outage_pauses_the_search_and_it_resumes_when_the_endpoint_answers(llm_server):
    error = {"status": 500, "body": {"error": {"message": "upstream overloaded"}}}
    llm_server.queue(good("one"), error, error, error, error, good("two"), good("three"))
    events = []
    syn = synthesizer(llm_server, max_transport_retries=1)
    outcome = SearchRunner(SOFTMAX, "interpreter", syn, InstantExecutor(),
                           config(budget=3, outage_retry_s=0.3),
                           on_event=events.append).run()
    assert outcome.status == "completed" and outcome.evaluated == 3, outcome.reason
    statuses = [e["payload"] for e in events if e["type"] == "status_changed"]
    paused = [s for s in statuses if s["status"] == "paused"]
    assert len(paused) == 2  # the first failure, then the probe that failed too
    assert paused[0]["outage"]["status_code"] == 500
    assert "HTTP 500" in paused[0]["reason"] and "upstream overloaded" in paused[0]["reason"]
    assert paused[1]["outage"]["retry_in_s"] == pytest.approx(0.6)  # the schedule doubles
    resumed = [s for s in statuses if s.get("outage_over")]
    assert len(resumed) == 1 and resumed[0]["status"] == "running"
    assert statuses[-1]["status"] == "completed"
    failed = [e["payload"] for e in events if e["type"] == "synthesis_failed"]
    assert len(failed) == 2 and all(f["transient"] and f["status_code"] == 500 for f in failed)


def test_the_loop_keeps_evaluating_while_a_slow_request_is_in_flight(llm_server):
    llm_server.queue(good("one"), good("two"), dict(good("three"), delay=2.0))
    events = []
    outcome = SearchRunner(SOFTMAX, "interpreter", synthesizer(llm_server),
                           InstantExecutor(delay_s=0.3), config(budget=3, max_in_flight=3),
                           on_event=events.append).run()
    assert outcome.evaluated == 3
    evaluated = {e["payload"]["id"]: e["ts"] for e in events if e["type"] == "node_evaluated"}
    created = {e["payload"]["id"]: e["ts"] for e in events if e["type"] == "node_created"}
    # node 2 was evaluated and applied while node 3's request was still in flight
    assert evaluated[2] < created[3] - 1.0


def test_the_per_request_timeout_is_a_transient_failure(llm_server):
    llm_server.queue(dict(good("late"), delay=2.0))
    syn = synthesizer(llm_server, timeout_s=0.5, max_transport_retries=0)
    root = SynthesisRequest(SOFTMAX, get_target("h200"),
                            NodeView(0, SOFTMAX, {}, "reference"), MemoryView("restart"))
    from search_engine.synthesis.base import SynthesisError

    with pytest.raises(SynthesisError, match="no answer within 0.5 s") as info:
        syn.propose(root, 1, random.Random(0))
    assert info.value.transient


# -- caps --------------------------------------------------------------------------------------

def test_a_huge_answer_becomes_a_clear_failed_node(llm_server):
    huge = fenced(softmax_kernel("huge") + "# padding\n" * 33_000)  # ~330 KB
    llm_server.queue(chat_reply(huge), good("fine"))
    outcome = SearchRunner(SOFTMAX, "interpreter", synthesizer(llm_server), InstantExecutor(),
                           config(budget=2)).run()
    node = outcome.nodes[1]
    assert node["status"] == "compile_error"
    assert "over the cap of 60,000" in node["result"]["message"]
    assert len(node["source"]) < 3000
    assert all(len(p) <= LLMConfig("x", "m").max_prompt_chars for p in llm_server.prompts())


def test_long_parents_and_trajectories_are_summarised_to_fit_the_context(llm_server):
    big = "# BIG-PARENT-HEAD\n" + "x = 1  # filler line\n" * 16_000 + "# BIG-PARENT-TAIL\n"
    ancestors = [NodeView(i, "", {"transformation": "llm:refine"}, "correct", reward=1.0,
                          message="m" * 200) for i in range(1, 7)]
    parent = NodeView(7, big, {"transformation": "llm:refine"}, "correct", reward=1.1)
    request = SynthesisRequest(SOFTMAX, get_target("h200"), parent,
                               MemoryView("trajectory", trajectory=ancestors + [parent]))
    cfg = LLMConfig(llm_server.base_url, "m", context_tokens=8000, max_tokens=2000)
    prompt = build_prompt(request, cfg.max_prompt_chars)
    assert len(prompt) <= cfg.max_prompt_chars < 330_000
    assert "BIG-PARENT-HEAD" in prompt and "BIG-PARENT-TAIL" in prompt
    assert "omitted to fit the context" in prompt and "older ancestors summarised" in prompt
    # and what the endpoint receives is the fitted prompt
    llm_server.queue(good("fitted"))
    LLMSynthesizer(cfg).propose(request, 1, random.Random(0))
    assert len(llm_server.prompts()[0]) <= cfg.max_prompt_chars


# -- several models ----------------------------------------------------------------------------

def test_the_bandit_prefers_yield_per_cost():
    bandit = ModelBandit(["cheap", "dear"], exploration=0.1)
    rng = random.Random(0)
    picks = []
    for _ in range(40):
        model = bandit.choose(rng)
        picks.append(model)
        bandit.observe(model, 1.0, 0.01 if model == "cheap" else 0.10)
    assert picks[:2] == ["cheap", "dear"]  # every model tried first
    assert picks.count("cheap") > 3 * picks.count("dear")


def test_several_models_spread_requests_rest_a_failing_endpoint_and_name_the_writer(llm_server):
    other = FakeLLMServer()  # model-b's endpoint is down (500 by default)
    try:
        llm_server.queue(*[good(f"a{i}") for i in range(4)])
        syn = make_llm_synthesizer(llm_server.base_url, f"model-a, model-b@{other.base_url}",
                                   api_key="test-key", prices=parse_prices("1:1"),
                                   backoff_s=0.01, max_transport_retries=0)
        outcome = SearchRunner(SOFTMAX, "interpreter", syn, InstantExecutor(),
                               config(budget=3)).run()
        assert outcome.evaluated == 3 and outcome.status == "completed", outcome.reason
        assert {n["origin"].get("model") for n in outcome.nodes[1:]} == {"model-a"}
        assert {r["body"]["model"] for r in other.requests} == {"model-b"}
        assert all(r["auth"] != "Bearer test-key" for r in other.requests)  # other origin
        assert len(other.requests) == 1  # rested after failing
    finally:
        other.close()
