"""The LLM synthesizer: any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, SGLang).

The caller passes the endpoint (base URL, key, model); nothing here reads settings. The prompt
(llm_prompt.py) carries the problem, the node's code, the memory operator's view, the node's
evaluation, the target's ceilings and the passages the search retrieved for the node's
diagnosis. The answer's Python block becomes the candidate (llm_replies.py); a malformed
answer (no code, no `ModelNew`, no `@triton.jit`, a syntax error) is answered with a
correction and retried. Timeouts, connection errors, 5xx and rate limits (429, honouring
Retry-After) are retried with backoff. Tokens and cost go into each proposal.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any

from search_engine.synthesis.base import Proposal, SynthesisError, SynthesisRequest
from search_engine.synthesis.llm_prompt import (
    FINAL_LINE, SYSTEM_PROMPT, build_prompt, fit_level, passage_source, sent_passages,
)
from search_engine.synthesis.llm_replies import (
    CODE_BLOCK, Answer, add_usage, brief_error, count_usage, extract_code, new_usage,
    refuses_logprobs, retry_after, token_logprobs,
)
from search_engine.synthesis.pricing import price_for
from search_engine.synthesis.prompts import FIT_LEVELS, chars_for_tokens, estimate_tokens

# Also the prompt's and the replies' names, which callers import from here.
__all__ = ["LLMConfig", "LLMProposal", "LLMSynthesizer", "SYSTEM_PROMPT", "FINAL_LINE",
           "build_prompt", "passage_source", "sent_passages", "CODE_BLOCK", "Answer",
           "extract_code", "token_logprobs", "new_usage", "add_usage"]


@dataclass
class LLMConfig:
    base_url: str
    model: str
    api_key: str = "none"
    temperature: float = 0.7
    max_tokens: int = 4096
    timeout_s: float = 120.0
    max_attempts: int = 3  # answers per candidate (malformed answers are retried)
    max_transport_retries: int = 4  # timeouts, 429 and 5xx per request
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    usd_per_1k_prompt_tokens: float = 0.0
    usd_per_1k_completion_tokens: float = 0.0
    price_known: bool = True  # False: the model has no price; its cost counts as $0
    context_tokens: int = 32_000  # the model's context window; the prompt is fitted into it
    max_answer_chars: int = 60_000  # a longer answer becomes a failed node, never a candidate
    max_candidate_chars: int = 40_000  # the same for the extracted code
    # Ask for the sampled tokens' log-probabilities (RL trainers' mismatch correction); an
    # endpoint that refuses the option is asked again without it, and not asked again.
    logprobs: bool = True
    top_logprobs: int = 0  # alternatives per token (0: only the sampled token's)

    @property
    def max_prompt_chars(self) -> int:
        """The user message's budget: the context less the answer and the system prompt."""
        return chars_for_tokens(self.context_tokens - self.max_tokens) - len(SYSTEM_PROMPT)

    @classmethod
    def priced(cls, base_url: str, model: str, prices: dict | None = None,
               **kwargs) -> "LLMConfig":
        """A config whose prices come from pricing.py's table and `prices` overrides."""
        price = price_for(model, prices)
        return cls(base_url=base_url, model=model,
                   usd_per_1k_prompt_tokens=price.usd_per_1k_prompt,
                   usd_per_1k_completion_tokens=price.usd_per_1k_completion,
                   price_known=price.known, **kwargs)


@dataclass
class LLMProposal(Proposal):
    """A proposal with what an RL trainer needs of the turn: the whole answer the model
    sampled, its tokens' log-probabilities (None when the endpoint gave none) and the
    sampling parameters of that request."""

    response: str = ""
    logprobs: dict[str, Any] | None = None
    sampling: dict[str, Any] = field(default_factory=dict)


class LLMSynthesizer:
    name = "llm"
    supports_crossover = True
    uses_context = True
    remote = True  # the search runs its requests beside the evaluations, never in the loop

    def __init__(self, config: LLMConfig, client=None, sleep=time.sleep):
        self.config = config
        self._client = client
        self._sleep = sleep
        self._logprobs_refused = False  # the endpoint said no to `logprobs`

    @property
    def model(self) -> str:
        return self.config.model

    @property
    def client(self):
        if self._client is None:
            import openai  # lazily: only LLM sessions need it

            self._client = openai.OpenAI(base_url=self.config.base_url,
                                         api_key=self.config.api_key or "none",
                                         timeout=self.config.timeout_s, max_retries=0)
        return self._client

    def propose(self, request: SynthesisRequest, n: int, rng: random.Random) -> list[Proposal]:
        """`n` answers, requested concurrently. Tokens of failed attempts are never lost: they
        go into the first proposal's usage, or into the SynthesisError when none succeeded."""
        prompt = build_prompt(request, self.config.max_prompt_chars)
        seeds = [rng.randrange(2**31) for _ in range(n)]
        if n == 1:
            outcomes = [self._attempt(request, prompt, seeds[0])]
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=n, thread_name_prefix="llm") as pool:
                outcomes = list(pool.map(lambda seed: self._attempt(request, prompt, seed),
                                         seeds))
        proposals = [o for o in outcomes if isinstance(o, Proposal)]
        errors = [o for o in outcomes if isinstance(o, SynthesisError)]
        wasted = new_usage()
        for error in errors:
            add_usage(wasted, error.usage)
        if proposals:
            if wasted["requests"]:
                add_usage(proposals[0].usage, wasted)
                proposals[0].usage["failed_requests"] = wasted["requests"]
            return proposals
        if not errors:
            return []
        last = errors[-1]
        transient = any(e.transient for e in errors)
        status = next((e.status_code for e in reversed(errors) if e.transient), last.status_code)
        raise SynthesisError("; ".join(dict.fromkeys(str(e) for e in errors)), usage=wasted,
                             transient=transient, status_code=status, model=self.model)

    def _attempt(self, request, prompt, seed):
        try:
            return self._one(request, prompt, seed)
        except SynthesisError as exc:
            return exc

    def _one(self, request: SynthesisRequest, prompt: str, seed: int) -> Proposal:
        cfg = self.config
        messages = [{"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": prompt}]
        usage = new_usage()
        corrections: list[str] = []
        problem = ""
        for _attempt in range(cfg.max_attempts):
            reply = self._chat(messages, usage, seed=seed)
            answer = reply.text
            seed = (seed * 1103515245 + 12345) % 2**31  # a retried answer may differ
            if len(answer) > cfg.max_answer_chars:
                return self._rejected(request, prompt, answer, usage, corrections, (
                    f"the answer was {len(answer):,} characters, over the cap of "
                    f"{cfg.max_answer_chars:,}"), reply)
            try:
                source = extract_code(answer)
            except ValueError as exc:
                problem = str(exc)
            else:
                if len(source) > cfg.max_candidate_chars:
                    return self._rejected(request, prompt, source, usage, corrections, (
                        f"the candidate was {len(source):,} characters, over the cap of "
                        f"{cfg.max_candidate_chars:,}"), reply)
                if source not in request.known_sources:
                    return self._proposal(request, prompt, source, usage, corrections, reply)
                problem = "the answer repeats a kernel already in the tree"
            complaint = (f"Your answer is unusable: {problem}. Reply with the complete file in "
                         "one ```python block.") if "repeats" not in problem else \
                "That kernel was already tried. Write a different one."
            corrections.append(complaint)
            messages += [{"role": "assistant", "content": answer},
                         {"role": "user", "content": complaint}]
        raise SynthesisError(f"no usable answer after {cfg.max_attempts} attempts: {problem}",
                             usage=usage, model=self.model)

    def _transformation(self, request: SynthesisRequest) -> str:
        if request.memory.mode == "restart" or request.parent.id == 0:
            return "llm:restart"
        return "llm:crossover" if request.second_parent is not None else "llm:refine"

    def _sent(self, request, prompt, corrections) -> dict[str, Any]:
        """Exactly what went to the endpoint (the key never does): for the candidate page."""
        level = fit_level(request, prompt)
        return {"model": self.model, "endpoint": _origin_only(self.config.base_url),
                "system": SYSTEM_PROMPT, "prompt_chars": len(prompt),
                "prompt_tokens_estimate": estimate_tokens(SYSTEM_PROMPT + prompt),
                "max_prompt_chars": self.config.max_prompt_chars,
                "summarised": level != FIT_LEVELS[0], "corrections": corrections,
                "passages": sent_passages(request, level)}

    def _proposal(self, request, prompt, source, usage, corrections, reply: Answer) -> Proposal:
        return LLMProposal(
            source=source, transformation=self._transformation(request),
            params={"model": self.model, "temperature": self.config.temperature},
            prompt=prompt, usage=usage, model=self.model,
            sent=self._sent(request, prompt, corrections),
            response=reply.text[:self.config.max_answer_chars], logprobs=reply.logprobs,
            sampling=reply.sampling)

    def _rejected(self, request, prompt, text, usage, corrections, why, reply) -> Proposal:
        proposal = self._proposal(request, prompt, text[:2000] + "\n# ... cut: " + why + "\n",
                                  usage, corrections, reply)
        proposal.rejected = why
        proposal.response, proposal.logprobs = "", None  # over the cap: not kept
        return proposal

    def _sampling(self, seed: int) -> dict[str, Any]:
        """The request's sampling parameters (what an RL trainer replays)."""
        cfg = self.config
        options: dict[str, Any] = {"temperature": cfg.temperature, "max_tokens": cfg.max_tokens,
                                   "seed": seed}
        if cfg.logprobs and not self._logprobs_refused:
            options["logprobs"] = True
            if cfg.top_logprobs:
                options["top_logprobs"] = cfg.top_logprobs
        return options

    def _chat(self, messages: list[dict], usage: dict, seed: int) -> Answer:
        import openai

        delay = self.config.backoff_s
        last = ""
        status: int | None = None
        for attempt in range(self.config.max_transport_retries + 1):
            sampling = self._sampling(seed)
            try:
                response = self.client.chat.completions.create(
                    model=self.config.model, messages=messages, **sampling)
            except openai.RateLimitError as exc:
                retry_after_s = retry_after(exc)
                wait = delay if retry_after_s is None else retry_after_s
                status, last = exc.status_code, f"HTTP {exc.status_code} {brief_error(exc)}"
            except openai.APITimeoutError:
                wait, status = delay, None
                last = f"no answer within {self.config.timeout_s:g} s"
            except openai.APIConnectionError as exc:
                wait, status, last = delay, None, f"connection failed: {brief_error(exc)}"
            except openai.InternalServerError as exc:
                wait = delay
                status, last = exc.status_code, f"HTTP {exc.status_code} {brief_error(exc)}"
            except openai.APIStatusError as exc:  # 4xx other than 429: retrying won't help
                if sampling.get("logprobs") and refuses_logprobs(exc):
                    self._logprobs_refused = True
                    return self._chat(messages, usage, seed)  # ask again, without them
                raise SynthesisError(f"the endpoint refused the request: {exc.status_code} "
                                     f"{exc.message}", usage=usage, status_code=exc.status_code,
                                     model=self.model) from exc
            else:
                count_usage(response, usage, self.config.usd_per_1k_prompt_tokens,
                            self.config.usd_per_1k_completion_tokens)
                choice = response.choices[0] if response.choices else None
                text = (choice.message.content or "") if choice else ""
                return Answer(text, token_logprobs(choice, self.config.top_logprobs),
                              {"model": getattr(response, "model", None) or self.config.model,
                               **sampling})
            if attempt == self.config.max_transport_retries:
                break
            self._sleep(min(wait, self.config.max_backoff_s))
            delay = min(delay * 2, self.config.max_backoff_s)
        raise SynthesisError(f"the endpoint failed {self.config.max_transport_retries + 1} "
                             f"times (timeouts, rate limits or server errors); last: {last}",
                             usage=usage, transient=True, status_code=status, model=self.model)


def _origin_only(url: str) -> str:
    """The endpoint without credentials or query (what the candidate page may show)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url or "")
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))
