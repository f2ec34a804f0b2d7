"""What an RL trainer gets from the trajectory export of an LLM session run against the local
OpenAI-compatible endpoint that returns token log-probabilities: per turn the log-probs of
the sampled answer, the model, the sampling parameters, and whether profiling-based
rejection drops the turn with the coverage and τ it was judged by."""

from __future__ import annotations

import json
from concurrent.futures import Future

import pytest

from kernelhub.optimization import runner
from kernelhub.optimization.services import session_create
from search_engine.evaluation.config import EvaluationConfig
from search_engine.evaluation.result import EvaluationResult, TimingStats
from tests.kernelhub.optimization.test_llm_session import llm  # noqa: F401 (the endpoint fixture)
from tests.search_engine.synthesis.conftest import chat_reply
from tests.search_engine.synthesis.test_llm_logprobs import KERNEL, with_logprobs

pytestmark = pytest.mark.django_db(transaction=True)


class CoverageExecutor:
    """The first candidate is correct with all device time in its kernels; the second is
    correct but leaves most of the time to torch (coverage under τ)."""

    def __init__(self):
        self.coverages = [0.95, 0.1]

    def submit(self, request):
        coverage = self.coverages.pop(0) if self.coverages else 1.0
        future = Future()
        future.set_result(EvaluationResult(
            status="correct", reward=1.5, coverage=coverage, speedup_vs_eager=1.2,
            message="scripted", timing={"eager": TimingStats(0.1, 0.0, 10, "cuda_events")}))
        return future

    def shutdown(self):
        pass


def answer(tag: str, tokens) -> dict:
    return with_logprobs(chat_reply(f"Try {tag}.\n```python\n# {tag}\n{KERNEL}```"),
                         tokens=tokens)


def test_the_export_carries_logprobs_model_sampling_and_rejection_per_turn(
        llm, teams, hardware, library_problem, key_client, api_keys, monkeypatch):  # noqa: F811
    monkeypatch.setattr("kernelhub.placement.evaluation_executor",
                        lambda session_id=None: CoverageExecutor())
    llm.queue(answer("one", ["Try", " one"]), answer("two", ["Try", " two"]))
    session = session_create(
        user=teams["users"][("alpha", "engineer")], team=teams["alpha"], problem=library_problem,
        hardware=hardware["interpreter"], budget_evaluations=2, synthesizer="llm", seed=4,
        config={"children_per_step": 1, "max_in_flight": 1,
                "policy_options": {"restart_probability": 0.0}})
    runner.run_session(session.pk)
    assert all(r["body"]["logprobs"] is True for r in llm.requests)
    response = key_client(api_keys[("alpha", "read")]).get(
        f"/api/v1/sessions/{session.pk}/trajectories", HTTP_ACCEPT="application/x-ndjson")
    assert response.status_code == 200
    records = [json.loads(line) for line in
               b"".join(response.streaming_content).decode().splitlines()]
    turns = {t["node_id"]: t for r in records for t in r["turns"]}
    tau = EvaluationConfig().lazy_threshold
    assert all(r["lazy_threshold"] == tau for r in records)
    first, second = turns["1"], turns["2"]
    assert first["model"] == "team-model"
    assert first["logprobs"] == {"tokens": ["Try", " one"], "logprobs": [-0.25, -0.5]}
    assert second["logprobs"]["tokens"] == ["Try", " two"]
    assert first["response"].startswith("Try one.\n```python")  # the sampled text itself
    sampling = first["sampling"]
    assert sampling["model"] == "served-model-v2" and sampling["logprobs"] is True
    assert sampling["temperature"] == llm.requests[0]["body"]["temperature"]
    assert sampling["seed"] == llm.requests[0]["body"]["seed"]
    assert sampling["max_tokens"] == llm.requests[0]["body"]["max_tokens"]
    assert first["rejection"] == {"dropped": False, "coverage": 0.95, "tau": tau,
                                  "rule": "status rejected_lazy, or correct with coverage < tau"}
    assert second["rejection"]["dropped"] is True and second["rejection"]["coverage"] == 0.1
    assert second["dropped_by_profiling"] is True and first["dropped_by_profiling"] is False
