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
from dataclasses import dataclass
from typing import Any

from search_engine.synthesis.base import Proposal, SynthesisError, SynthesisRequest

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


def build_prompt(request: SynthesisRequest) -> str:
    """The user message for one expansion (see the module docstring for what goes in)."""
    t = request.target
    parts = [_section("Problem (reference, KernelBench format)",
                      f"```python\n{request.problem_source.strip()}\n```")]
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
                              f"```python\n{parent.source.strip()}\n```"))
        parts.append(_section("Its evaluation", _evaluation_text(parent)))
        parts.append(_section("Your task", "Improve this kernel: fix it if it failed, "
                              "otherwise make it faster while keeping it correct."))
    if request.second_parent is not None:
        parts.append(_section(f"Second parent (node {request.second_parent.id}) to combine",
                              f"```python\n{request.second_parent.source.strip()}\n```"))
    memory = request.memory
    if memory.trajectory:
        lines = [f"- node {v.id}: {v.origin.get('transformation', '')} → {v.status}, reward "
                 f"{_num(v.reward)}, speedup {_num(v.speedup_vs_eager)}, "
                 f"{_bottleneck(v.diagnostics)} {v.message[:200]}" for v in memory.trajectory]
        parts.append(_section("Trajectory (ancestors, oldest first)", "\n".join(lines)))
    if memory.siblings:
        lines = [f"- node {v.id}: {v.origin.get('transformation', '')} → {v.status}, reward "
                 f"{_num(v.reward)}, speedup {_num(v.speedup_vs_eager)}: {v.message[:200]}"
                 for v in memory.siblings]
        parts.append(_section("Already tried from this kernel (siblings)", "\n".join(lines)))
    if request.context:
        lines = [f"[{i + 1}] {p.document}" + (f" p.{p.page}" if p.page else "")
                 + (f" ({p.kind})" if p.kind != "document" else "") + f":\n{p.text.strip()[:1200]}"
                 for i, p in enumerate(request.context)]
        parts.append(_section(f"Retrieved context (query: {request.context_query})",
                              "\n\n".join(lines)))
    parts.append("Answer with the complete file in one ```python block.")
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


class LLMSynthesizer:
    name = "llm"
    supports_crossover = True
    uses_context = True

    def __init__(self, config: LLMConfig, client=None, sleep=time.sleep):
        self.config = config
        self._client = client
        self._sleep = sleep

    @property
    def client(self):
        if self._client is None:
            import openai  # lazily: only LLM sessions need it

            self._client = openai.OpenAI(base_url=self.config.base_url,
                                         api_key=self.config.api_key or "none",
                                         timeout=self.config.timeout_s, max_retries=0)
        return self._client

    def propose(self, request: SynthesisRequest, n: int, rng: random.Random) -> list[Proposal]:
        prompt = build_prompt(request)
        proposals, errors = [], []
        for _ in range(n):
            try:
                proposals.append(self._one(request, prompt, rng))
            except SynthesisError as exc:
                errors.append(str(exc))
        if not proposals and errors:
            raise SynthesisError("; ".join(errors))
        return proposals

    def _one(self, request: SynthesisRequest, prompt: str, rng: random.Random) -> Proposal:
        messages = [{"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": prompt}]
        usage = {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "requests": 0}
        problem = ""
        for _attempt in range(self.config.max_attempts):
            answer = self._chat(messages, usage, seed=rng.randrange(2**31))
            try:
                source = extract_code(answer)
            except ValueError as exc:
                problem = str(exc)
                messages += [{"role": "assistant", "content": answer},
                             {"role": "user", "content": f"Your answer is unusable: {problem}. "
                              "Reply with the complete file in one ```python block."}]
                continue
            if source in request.known_sources:
                problem = "the answer repeats a kernel already in the tree"
                messages += [{"role": "assistant", "content": answer},
                             {"role": "user", "content": "That kernel was already tried. "
                              "Write a different one."}]
                continue
            mode = request.memory.mode
            return Proposal(
                source=source,
                transformation="llm:restart" if mode == "restart" or request.parent.id == 0
                else ("llm:crossover" if request.second_parent is not None else "llm:refine"),
                params={"model": self.config.model, "temperature": self.config.temperature},
                prompt=prompt, usage=usage)
        raise SynthesisError(f"no usable answer after {self.config.max_attempts} attempts: "
                             f"{problem}")

    def _chat(self, messages: list[dict], usage: dict, seed: int) -> str:
        import openai

        delay = self.config.backoff_s
        for attempt in range(self.config.max_transport_retries + 1):
            try:
                response = self.client.chat.completions.create(
                    model=self.config.model, messages=messages, seed=seed,
                    temperature=self.config.temperature, max_tokens=self.config.max_tokens)
            except openai.RateLimitError as exc:
                retry_after = _retry_after(exc)
                wait = delay if retry_after is None else retry_after
            except (openai.APITimeoutError, openai.APIConnectionError,
                    openai.InternalServerError):
                wait = delay
            except openai.APIStatusError as exc:  # 4xx other than 429: retrying won't help
                raise SynthesisError(f"the endpoint refused the request: {exc.status_code} "
                                     f"{exc.message}") from exc
            else:
                self._count(response, usage)
                choice = response.choices[0] if response.choices else None
                return (choice.message.content or "") if choice else ""
            if attempt == self.config.max_transport_retries:
                break
            self._sleep(min(wait, self.config.max_backoff_s))
            delay = min(delay * 2, self.config.max_backoff_s)
        raise SynthesisError(f"the endpoint failed {self.config.max_transport_retries + 1} "
                             "times (timeouts, rate limits or server errors)")

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


def _retry_after(exc) -> float | None:
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None
