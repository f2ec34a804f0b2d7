"""The LLM synthesizer against a local OpenAI-compatible server: prompts carry the problem,
the node's code, diagnostics, integrity findings, memory and retrieved context; replies
become candidates; malformed answers, timeouts and 429s are retried; tokens and cost kept."""

import random

import pytest

from search_engine.evaluation.result import EvaluationResult, IntegrityFlag, TimingStats
from search_engine.hardware import get_target
from search_engine.protocols import ContextPassage
from search_engine.search import SearchConfig, SearchRunner
from search_engine.synthesis.base import (
    MemoryView, NodeView, SynthesisError, SynthesisRequest,
)
from search_engine.synthesis.llm import LLMConfig, LLMSynthesizer, build_prompt, extract_code
from search_engine.synthesis.offline import OfflineSynthesizer
from search_engine.synthesis.offline.spaces import templates

from .conftest import chat_reply, library_source

SOFTMAX = library_source("softmax")


def softmax_kernel(tag: str) -> str:
    syn = OfflineSynthesizer()
    an = syn.analysis(SOFTMAX)
    return f"# {tag}\n" + syn.render(SOFTMAX, templates.default_params(an, "interpreter",
                                                                       "strict"))


def fenced(code: str) -> str:
    return f"Here is a faster kernel.\n\n```python\n{code}```\nIt fuses the row."


class RecordingContext:
    """A ContextProvider double: passages keyed on the query it receives."""

    def __init__(self):
        self.queries = []

    def retrieve(self, query, hardware=None, categories=None, k=5):
        self.queries.append((query, hardware, categories))
        if "memory hierarchy" in query:
            text = "HBM3e moves 4.8 TB/s; coalesce loads along the row (MEMORY-PASSAGE)."
        elif "compiler" in query.lower():
            text = "tl.arange needs a power-of-two constexpr size (COMPILER-PASSAGE)."
        else:
            text = "Fuse the whole row into one program (GENERAL-PASSAGE)."
        return [ContextPassage(text=text, document="H200 tuning guide", score=0.9, page=12)]


def synthesizer(server, **changes):
    return LLMSynthesizer(LLMConfig(base_url=server.base_url, model="test-model",
                                    api_key="test-key", timeout_s=2.0, backoff_s=0.01,
                                    usd_per_1k_prompt_tokens=0.5,
                                    usd_per_1k_completion_tokens=1.5, **changes),
                          sleep=lambda s: None)


def test_extract_code():
    code = softmax_kernel("a")
    assert extract_code(fenced(code)) == code.strip() + "\n"
    with pytest.raises(ValueError, match="no ```python"):
        extract_code("I would use shared memory.")
    with pytest.raises(ValueError, match="no class ModelNew"):
        extract_code("```python\nimport triton\n@triton.jit\ndef k(): pass\n```")
    with pytest.raises(ValueError, match="does not parse"):
        extract_code("```python\nclass ModelNew(:\n```")
    with pytest.raises(ValueError, match="triton.jit"):
        extract_code("```python\nclass ModelNew:\n    pass\n```")


def test_prompt_carries_diagnostics_findings_memory_and_context():
    parent = NodeView(
        id=3, source="# PARENT-CODE\nclass ModelNew: ...", status="correct", reward=1.2,
        speedup_vs_eager=0.8, message="all 5 trials within fp32 tolerance", coverage=0.41,
        origin={"synthesizer": "llm", "transformation": "llm:refine"},
        diagnostics={"bottleneck": {"class": "memory-bound", "reason": "71% of peak bandwidth"},
                     "kernels": [{"name": "softmax_kernel", "n_regs": 40, "n_spills": 3}]},
        integrity_flags=[{"check": "runtime.coverage", "evidence": "torch.exp took 59% of "
                          "device time", "severity": "warning"}])
    sibling = NodeView(id=4, source="", status="compile_error", message="BLOCK must be pow2",
                       origin={"transformation": "llm:refine"})
    ancestor = NodeView(id=1, source="", status="correct", reward=1.0, origin={
        "transformation": "llm:restart"}, diagnostics={"bottleneck": "latency-bound"})
    request = SynthesisRequest(
        problem_source=SOFTMAX, target=get_target("h200"), parent=parent,
        memory=MemoryView("both", trajectory=[ancestor, parent], siblings=[sibling]),
        context=[ContextPassage("coalesce loads (MEMORY-PASSAGE)", "H200 guide", 0.9, page=7)],
        context_query="memory hierarchy on H200")
    prompt = build_prompt(request)
    for expected in ("torch.softmax(x, dim=1)", "PARENT-CODE", "memory-bound",
                     "71% of peak bandwidth", "n_spills=3", "runtime.coverage",
                     "torch.exp took 59%", "coverage", "0.410", "BLOCK must be pow2",
                     "latency-bound", "MEMORY-PASSAGE", "H200 guide p.7",
                     "memory hierarchy on H200", "4300 GB/s", "input_precision='ieee'"):
        assert expected in prompt, expected


def test_reply_becomes_a_candidate_and_diagnostics_and_context_reach_the_next_prompt(
        llm_server, local_executor):
    llm_server.queue(chat_reply(fenced(softmax_kernel("first"))),
                     chat_reply(fenced(softmax_kernel("second"))))
    context = RecordingContext()
    config = SearchConfig(budget=2, children_per_step=1, max_in_flight=1, seed=0,
                          policy_options={"restart_probability": 0.0})
    outcome = SearchRunner(SOFTMAX, "interpreter", synthesizer(llm_server), local_executor,
                           config, context=context).run()

    assert outcome.evaluated == 2
    first = outcome.nodes[1]
    assert first["origin"]["synthesizer"] == "llm"
    assert first["status"] == "correct", (first["result"] or {}).get("message")
    assert first["source"].startswith("# first")
    assert first["origin"]["usage"]["prompt_tokens"] == 120
    assert first["origin"]["usage"]["cost_usd"] == pytest.approx(0.12 * 0.5 / 1 + 0.08 * 1.5)
    assert first["origin"]["context"][0]["document"] == "H200 tuning guide"

    second_prompt = llm_server.prompts()[1]
    assert "# first" in second_prompt  # the node's code
    assert "status: correct" in second_prompt and "all 5 trials" in second_prompt
    assert "interpreter: no device ceilings" in second_prompt  # its diagnosis
    assert "GENERAL-PASSAGE" in second_prompt  # retrieved context
    assert outcome.nodes[2]["parent_id"] == 1
    assert llm_server.requests[0]["auth"] == "Bearer test-key"
    assert llm_server.requests[0]["body"]["model"] == "test-model"


class DiagnosedExecutor:
    """Every candidate is memory-bound with a coverage warning, or fails to compile."""

    def __init__(self, status):
        self.status = status

    def submit(self, request):
        from concurrent.futures import Future

        future = Future()
        future.set_result(EvaluationResult(
            status=self.status, reward=1.0 if self.status == "correct" else 0.0,
            coverage=0.9, message="scripted verdict",
            timing={"eager": TimingStats(0.1, 0.0, 10, "cuda_events")},
            diagnostics={"bottleneck": {"class": "memory-bound",
                                        "reason": "82% of peak bandwidth"}},
            integrity_flags=[IntegrityFlag("runtime.roofline", "close to the roofline floor",
                                           "warning")]))
        return future

    def shutdown(self):
        pass


@pytest.mark.parametrize("status,query_word,passage", [
    ("correct", "memory hierarchy", "MEMORY-PASSAGE"),
    ("compile_error", "compiler", "COMPILER-PASSAGE"),
])
def test_retrieval_is_keyed_on_the_diagnosis(llm_server, status, query_word, passage):
    llm_server.queue(chat_reply(fenced(softmax_kernel("one"))),
                     chat_reply(fenced(softmax_kernel("two"))))
    context = RecordingContext()
    config = SearchConfig(budget=2, children_per_step=1, max_in_flight=1,
                          policy_options={"restart_probability": 0.0})
    SearchRunner(SOFTMAX, "h200", synthesizer(llm_server), DiagnosedExecutor(status), config,
                 context=context).run()
    query, hardware, categories = context.queries[1]
    assert query_word in query and hardware == "h200"
    prompt = llm_server.prompts()[1]
    assert passage in prompt and "scripted verdict" in prompt
    if status == "correct":
        assert "82% of peak bandwidth" in prompt and "runtime.roofline" in prompt


def root_request():
    return SynthesisRequest(problem_source=SOFTMAX, target=get_target("h200"),
                            parent=NodeView(0, SOFTMAX, {"synthesizer": "reference"},
                                            "reference"),
                            memory=MemoryView("restart"))


def test_malformed_answer_is_corrected_and_retried(llm_server):
    llm_server.queue(chat_reply("Use more warps."), chat_reply(fenced(softmax_kernel("ok"))))
    [proposal] = synthesizer(llm_server).propose(root_request(), 1, random.Random(0))
    assert proposal.source.startswith("# ok")
    assert proposal.usage["requests"] == 2 and proposal.usage["prompt_tokens"] == 240
    correction = llm_server.requests[1]["body"]["messages"][-1]["content"]
    assert "unusable" in correction and "no ```python code block" in correction


def test_rate_limit_and_timeout_are_retried(llm_server):
    llm_server.queue(
        {"status": 429, "headers": {"retry-after": "0"},
         "body": {"error": {"message": "slow down", "type": "rate_limit"}}},
        dict(chat_reply("late"), delay=3.0),  # longer than the 2 s client timeout
        chat_reply(fenced(softmax_kernel("after retries"))))
    slept = []
    syn = synthesizer(llm_server)
    syn._sleep = slept.append
    [proposal] = syn.propose(root_request(), 1, random.Random(0))
    assert proposal.source.startswith("# after retries")
    assert len(llm_server.requests) == 3 and slept[0] == 0.0 and len(slept) == 2


def test_refused_request_is_a_clear_error(llm_server):
    llm_server.queue({"status": 401, "body": {"error": {"message": "bad key"}}})
    with pytest.raises(SynthesisError, match="refused the request: 401"):
        synthesizer(llm_server).propose(root_request(), 1, random.Random(0))


def test_endpoint_that_keeps_failing_gives_up(llm_server):
    syn = synthesizer(llm_server, max_transport_retries=2)
    with pytest.raises(SynthesisError, match="failed 3 times"):
        syn.propose(root_request(), 1, random.Random(0))
    assert len(llm_server.requests) == 3
