"""RL data from the LLM synthesizer against the local OpenAI-compatible server: the request
asks for token log-probabilities, the turn keeps them with the whole answer, the model and
the sampling parameters; an endpoint that refuses the option is asked again without it; and
skills reach the prompt with their measured effect."""

from __future__ import annotations

import random

import pytest

from search_engine.hardware import get_target
from search_engine.protocols import ContextPassage
from search_engine.synthesis.base import MemoryView, NodeView, SynthesisRequest
from search_engine.synthesis.llm import LLMConfig, LLMSynthesizer, build_prompt

from .conftest import chat_reply

# Never evaluated here: enough to pass the answer checks (a ModelNew, a @triton.jit kernel).
KERNEL = """import triton


@triton.jit
def copy_kernel(x_ptr):
    pass


class ModelNew:
    pass
"""
ANSWER = f"Fused.\n```python\n{KERNEL}```"
TOKENS = ["Fused", ".", "\n```", "python"]


def with_logprobs(reply: dict, tokens=TOKENS, top: int = 0) -> dict:
    content = [{"token": t, "logprob": -0.25 * (i + 1), "bytes": list(t.encode()),
                "top_logprobs": [{"token": t, "logprob": -0.25 * (i + 1), "bytes": None}] * top}
               for i, t in enumerate(tokens)]
    reply["body"]["choices"][0]["logprobs"] = {"content": content}
    reply["body"]["model"] = "served-model-v2"
    return reply


def request(context=()) -> SynthesisRequest:
    root = NodeView(id=0, source="import torch\nclass Model: ...", origin={}, status="reference")
    return SynthesisRequest(problem_source=root.source, target=get_target("interpreter"),
                            parent=root, memory=MemoryView(mode="trajectory"),
                            context=list(context))


def synthesizer(server, **changes) -> LLMSynthesizer:
    return LLMSynthesizer(LLMConfig(base_url=server.base_url, model="test-model",
                                    timeout_s=2.0, backoff_s=0.01, temperature=0.6,
                                    max_tokens=512, **changes), sleep=lambda s: None)


def test_logprobs_are_requested_and_kept_with_the_answer_model_and_sampling(llm_server):
    llm_server.queue(with_logprobs(chat_reply(ANSWER)))
    [proposal] = synthesizer(llm_server).propose(request(), 1, random.Random(3))
    body = llm_server.requests[0]["body"]
    assert body["logprobs"] is True and "top_logprobs" not in body
    origin = proposal.origin("llm")
    assert origin["response"] == ANSWER  # the whole sampled answer, not only its code
    assert origin["logprobs"] == {"tokens": TOKENS, "logprobs": [-0.25, -0.5, -0.75, -1.0]}
    assert origin["sampling"] == {"model": "served-model-v2", "temperature": 0.6,
                                  "max_tokens": 512, "seed": body["seed"], "logprobs": True}


def test_top_logprobs_when_asked_and_none_when_the_endpoint_sends_none(llm_server):
    llm_server.queue(with_logprobs(chat_reply(ANSWER), top=2), chat_reply(ANSWER))
    [first] = synthesizer(llm_server, top_logprobs=2).propose(request(), 1, random.Random(0))
    assert llm_server.requests[0]["body"]["top_logprobs"] == 2
    assert first.logprobs["top"][0] == {"Fused": -0.25}
    [second] = synthesizer(llm_server).propose(request(), 1, random.Random(1))
    assert second.logprobs is None and second.response == ANSWER


def test_an_endpoint_that_refuses_logprobs_is_asked_again_without_them(llm_server):
    refused = {"status": 400, "body": {"error": {"message": "logprobs is not supported "
                                                            "for this model"}}}
    llm_server.queue(refused, chat_reply(ANSWER), chat_reply(ANSWER.replace("Fused", "Again")))
    syn = synthesizer(llm_server)
    [proposal] = syn.propose(request(), 1, random.Random(0))
    assert [r["body"].get("logprobs") for r in llm_server.requests] == [True, None]
    assert proposal.logprobs is None and "logprobs" not in proposal.sampling
    syn.propose(request(), 1, random.Random(1))
    assert "logprobs" not in llm_server.requests[2]["body"]  # not asked again


def test_other_refusals_still_fail_clearly(llm_server):
    from search_engine.synthesis.base import SynthesisError

    llm_server.queue({"status": 400, "body": {"error": {"message": "bad messages"}}})
    with pytest.raises(SynthesisError, match="refused the request: 400"):
        synthesizer(llm_server).propose(request(), 1, random.Random(0))


def test_skills_reach_the_prompt_with_their_measured_effect():
    skill = ContextPassage(
        "Skill: rows_up for softmax kernels on h200.", "skill: rows_up", 0.8, section="softmax",
        kind="skill", metadata={"skill_id": 5, "transformation": "rows_up", "speedup_mean": 1.8,
                                "speedup_best": 2.4, "observations": 3, "uses": 4, "helped": 3,
                                "gain_mean": 1.31})
    fresh = ContextPassage("Skill: fresh.", "skill: fresh", 0.6, kind="skill",
                           metadata={"skill_id": 6, "speedup_mean": 1.2, "speedup_best": 1.2,
                                     "observations": 1, "uses": 0, "helped": 0})
    manual = ContextPassage("Coalesce loads.", "H200 guide", 0.5, page=3)
    prompt = build_prompt(request([skill, fresh, manual]))
    assert ("Measured effect: 1.80x mean speedup vs eager (2.40x best) over 3 step(s); "
            "reused 4 time(s), beat its parent 3 time(s), mean gain 1.31x.") in prompt
    assert "1.20x mean speedup vs eager (1.20x best) over 1 step(s); not reused yet." in prompt
    manual_part = prompt[prompt.index("H200 guide"):]
    assert "Measured effect" not in manual_part
