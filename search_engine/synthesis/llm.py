"""The LLM synthesizer: any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, SGLang).

The caller passes the endpoint (base URL, key, model); nothing here reads settings. The prompt
carries the problem, the node's code, the memory operator's view (trajectory, siblings), the
node's evaluation (status, diagnostics, integrity findings), the target's ceilings and the
passages the search retrieved for the node's diagnosis. The answer's Python block becomes the
candidate; a malformed answer (no code, no `ModelNew`, no `@triton.jit`, a syntax error) is
answered with a correction and retried. Timeouts, connection errors, 5xx and rate limits
(429, honouring Retry-After) are retried with backoff. Tokens and cost go into each proposal.
"""

from __future__ import annotations

import ast
import random
import re
import time
from dataclasses import dataclass, field
from typing import Any

from search_engine.protocols import ContextPassage
from search_engine.synthesis.base import Proposal, SynthesisError, SynthesisRequest
from search_engine.synthesis.pricing import price_for
from search_engine.synthesis.prompts import (
    FIT_LEVELS, Level, chars_for_tokens, estimate_tokens, fit_hard, keep_last, shorten_code,
    skill_effect_text, summarise_dropped,
)

SYSTEM_PROMPT = (
    "You are an expert GPU kernel engineer. You write Triton kernels that are correct first "
    "and fast second. Answer with one complete Python file in a single ```python block: it "
    "defines `class ModelNew(nn.Module)` with the same constructor arguments and forward "
    "signature as the reference `Model`, and its forward launches your own @triton.jit "
    "kernels that do the real work. Never call torch operators for the problem's computation "
    "(no torch.softmax, F.linear, torch.matmul, nn.Linear calls), never catch exceptions to "
    "fall back to torch, never touch timers, streams or threads.")

CODE_BLOCK = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)


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


@dataclass
class Answer:
    text: str
    logprobs: dict[str, Any] | None
    sampling: dict[str, Any]


def token_logprobs(choice, top: int = 0) -> dict[str, Any] | None:
    """{"tokens", "logprobs"[, "top"]} of a chat choice; None when the endpoint sent none."""
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        return None
    out: dict[str, Any] = {"tokens": [str(t.token) for t in content],
                           "logprobs": [float(t.logprob) for t in content]}
    if top:
        out["top"] = [{str(a.token): float(a.logprob) for a in (t.top_logprobs or [])}
                      for t in content]
    return out


def extract_code(answer: str) -> str:
    """The candidate source in an answer; raises ValueError saying what is wrong with it."""
    blocks = CODE_BLOCK.findall(answer or "")
    candidates = [b for b in blocks if "ModelNew" in b] or blocks
    if not candidates:
        if "class ModelNew" in (answer or ""):
            candidates = [answer]
        else:
            raise ValueError("the answer has no ```python code block")
    code = candidates[-1].strip() + "\n"
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise ValueError(f"the code does not parse: line {exc.lineno}: {exc.msg}") from exc
    if not any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body):
        raise ValueError("the code defines no class ModelNew")
    if "triton.jit" not in code:
        raise ValueError("the code defines no @triton.jit kernel")
    return code


def _section(title: str, body: str) -> str:
    return f"## {title}\n{body.strip()}\n"


def build_prompt(request: SynthesisRequest, max_chars: int | None = None) -> str:
    """The user message for one expansion (see the module docstring for what goes in).

    With `max_chars` (the context budget), long parents, trajectories, siblings and passages
    are summarised step by step until the message fits (see prompts.FIT_LEVELS)."""
    prompt = ""
    for level in FIT_LEVELS:
        prompt = _render_prompt(request, level)
        if max_chars is None or len(prompt) <= max_chars:
            return prompt
    return fit_hard(prompt, max_chars, FINAL_LINE)


FINAL_LINE = "Answer with the complete file in one ```python block."


def passage_source(p: ContextPassage) -> str:
    """Where a passage comes from, as the prompt and the candidate page name it."""
    where = p.document + (f" p.{p.page}" if p.page else "")
    if p.section and p.kind != "skill":
        where += f" \u00a7 {p.section}"
    meta = p.metadata or {}
    details = [p.kind if p.kind != "document" else "manual"]
    if meta.get("category"):
        details.append(str(meta["category"]))
    if p.kind == "skill" and p.section:
        details.append(f"family {p.section}")
    if meta.get("transformation"):
        details.append(f"transformation {meta['transformation']}")
    return f"{where} ({', '.join(details)}; score {p.score:.3f})"


def sent_passages(request: SynthesisRequest, level: Level = None) -> list[dict[str, Any]]:
    """The passages as the prompt carries them (text cut to the level's passage size)."""
    size = (level or FIT_LEVELS[0]).passage_chars
    return [{"document": p.document, "page": p.page, "section": p.section, "kind": p.kind,
             "score": p.score, "category": (p.metadata or {}).get("category", ""),
             "source": passage_source(p), "text": p.text.strip()[:size],
             **({"skill_id": (p.metadata or {}).get("skill_id"),
                 "effect": skill_effect_text(p.metadata)} if p.kind == "skill" else {})}
            for p in request.context]


def _render_prompt(request: SynthesisRequest, level: Level) -> str:
    t = request.target
    parts = [_section("Problem (reference, KernelBench format)",
                      f"```python\n{shorten_code(request.problem_source, level.problem_chars)}"
                      "\n```")]
    parts.append(_section("Target hardware", (
        f"{t.name} ({t.vendor} {t.architecture}): memory bandwidth {t.memory_bandwidth_gbs:g} "
        f"GB/s, fp32 {t.fp32_tflops:g} TFLOP/s, bf16 {t.bf16_tflops:g} TFLOP/s, "
        f"{t.multiprocessors} SMs, L2 {t.l2_bytes // (1024 * 1024)} MiB, shared memory per "
        f"block {t.shared_memory_per_block_bytes // 1024} KiB ({t.source}). {t.notes}")))
    parts.append(_section("Precision policy", (
        f"{request.precision_policy}: "
        + ("fp32 math; tl.dot must use input_precision='ieee' (tf32 fails)."
           if request.precision_policy == "strict" else "looser math is allowed and labelled."))))
    parent = request.parent
    if request.memory.mode == "restart" or parent.id == 0:
        parts.append(_section("Your task", "Write a first fast Triton implementation from "
                              "scratch (the reference is the starting point)."))
    else:
        parts.append(_section(f"Current kernel (node {parent.id})",
                              f"```python\n{shorten_code(parent.source, level.code_chars)}\n```"))
        parts.append(_section("Its evaluation", _evaluation_text(parent)))
        parts.append(_section("Your task", "Improve this kernel: fix it if it failed, "
                              "otherwise make it faster while keeping it correct."))
    if request.second_parent is not None:
        parts.append(_section(
            f"Second parent (node {request.second_parent.id}) to combine",
            f"```python\n{shorten_code(request.second_parent.source, level.code_chars)}\n```"))
    memory = request.memory
    if memory.trajectory:
        kept, dropped = keep_last(memory.trajectory, level.trajectory_items)
        lines = [summarise_dropped(dropped, "older ancestors")] if dropped else []
        lines += [f"- node {v.id}: {v.origin.get('transformation', '')} \u2192 {v.status}, reward "
                  f"{_num(v.reward)}, speedup {_num(v.speedup_vs_eager)}, "
                  f"{_bottleneck(v.diagnostics)} {v.message[:level.message_chars]}"
                  for v in kept]
        parts.append(_section("Trajectory (ancestors, oldest first)", "\n".join(lines)))
    if memory.siblings:
        kept, dropped = keep_last(memory.siblings, level.sibling_items)
        lines = [summarise_dropped(dropped, "earlier siblings")] if dropped else []
        lines += [f"- node {v.id}: {v.origin.get('transformation', '')} \u2192 {v.status}, reward "
                  f"{_num(v.reward)}, speedup {_num(v.speedup_vs_eager)}: "
                  f"{v.message[:level.message_chars]}" for v in kept]
        parts.append(_section("Already tried from this kernel (siblings)", "\n".join(lines)))
    if request.context:
        lines = [f"[{i + 1}] {p['source']}:\n{p['text']}"
                 + (f"\n{p['effect']}" if p.get("effect") else "")
                 for i, p in enumerate(sent_passages(request, level))]
        parts.append(_section(f"Retrieved context (query: {request.context_query})",
                              "\n\n".join(lines)))
    parts.append(FINAL_LINE)
    return "\n".join(parts)


def _num(value) -> str:
    return f"{value:.3f}" if isinstance(value, (int, float)) else "n/a"


def _bottleneck(diagnostics: dict[str, Any]) -> str:
    b = diagnostics.get("bottleneck", "")
    if isinstance(b, dict):
        return f"[{b.get('class', '')}: {b.get('reason', '')}]"
    return f"[{b}]" if b else ""


def _evaluation_text(view) -> str:
    lines = [f"status: {view.status}", f"message: {view.message[:800]}",
             f"reward: {_num(view.reward)}, speedup vs eager: {_num(view.speedup_vs_eager)}, "
             f"coverage (share of device time in your kernels): {_num(view.coverage)}"]
    diag = view.diagnostics
    if diag.get("bottleneck"):
        lines.append(f"diagnosis: {_bottleneck(diag)}")
    roof = diag.get("roofline") or {}
    if roof.get("available"):
        lines.append("roofline: " + ", ".join(f"{k} {v}" for k, v in roof.items()
                                              if isinstance(v, (int, float))))
    for kernel in (diag.get("kernels") or [])[:4]:
        lines.append("kernel: " + ", ".join(f"{k}={v}" for k, v in kernel.items()
                                            if k in ("name", "n_regs", "n_spills", "shared_bytes",
                                                     "num_warps", "occupancy")))
    if view.integrity_flags:
        lines.append("integrity findings:")
        lines += [f"- {f['check']} ({f.get('severity', 'hack')}): {f['evidence'][:300]}"
                  for f in view.integrity_flags]
    return "\n".join(lines)


def new_usage() -> dict[str, Any]:
    return {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "requests": 0}


def add_usage(total: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
    for key in ("prompt_tokens", "completion_tokens", "requests"):
        total[key] = int(total.get(key) or 0) + int(more.get(key) or 0)
    total["cost_usd"] = round(float(total.get("cost_usd") or 0.0)
                              + float(more.get("cost_usd") or 0.0), 8)
    return total


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
        level = next((lv for lv in FIT_LEVELS if len(_render_prompt(request, lv)) == len(prompt)),
                     FIT_LEVELS[-1])
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
                retry_after = _retry_after(exc)
                wait = delay if retry_after is None else retry_after
                status, last = exc.status_code, f"HTTP {exc.status_code} {_brief(exc)}"
            except openai.APITimeoutError:
                wait, status = delay, None
                last = f"no answer within {self.config.timeout_s:g} s"
            except openai.APIConnectionError as exc:
                wait, status, last = delay, None, f"connection failed: {_brief(exc)}"
            except openai.InternalServerError as exc:
                wait = delay
                status, last = exc.status_code, f"HTTP {exc.status_code} {_brief(exc)}"
            except openai.APIStatusError as exc:  # 4xx other than 429: retrying won't help
                if sampling.get("logprobs") and _refuses_logprobs(exc):
                    self._logprobs_refused = True
                    return self._chat(messages, usage, seed)  # ask again, without them
                raise SynthesisError(f"the endpoint refused the request: {exc.status_code} "
                                     f"{exc.message}", usage=usage, status_code=exc.status_code,
                                     model=self.model) from exc
            else:
                self._count(response, usage)
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

    def _count(self, response, usage: dict) -> None:
        used = getattr(response, "usage", None)
        prompt_tokens = int(getattr(used, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(used, "completion_tokens", 0) or 0)
        usage["requests"] += 1
        usage["prompt_tokens"] += prompt_tokens
        usage["completion_tokens"] += completion_tokens
        usage["cost_usd"] = round(usage["cost_usd"] + prompt_tokens / 1000 *
                                  self.config.usd_per_1k_prompt_tokens + completion_tokens /
                                  1000 * self.config.usd_per_1k_completion_tokens, 8)


def _refuses_logprobs(exc) -> bool:
    """A 400/422 that names the logprobs option: the endpoint does not offer them."""
    text = f"{getattr(exc, 'message', '')} {getattr(exc, 'body', '')}".lower()
    return getattr(exc, "status_code", None) in (400, 422) and "logprob" in text


def _brief(exc) -> str:
    message = getattr(exc, "message", "") or str(exc)
    return message[:200]


def _origin_only(url: str) -> str:
    """The endpoint without credentials or query (what the candidate page may show)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url or "")
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _retry_after(exc) -> float | None:
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None
