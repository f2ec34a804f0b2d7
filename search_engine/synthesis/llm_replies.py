"""Reading the endpoint's replies: the candidate code in an answer, the sampled tokens'
log-probabilities, the tokens and cost each request used, and what an error says about
retrying (rate limits' Retry-After, endpoints that refuse `logprobs`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

CODE_BLOCK = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)


@dataclass
class Answer:
    """One chat answer: its text, its tokens' log-probabilities, the sampling it was asked with."""

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


def new_usage() -> dict[str, Any]:
    """An empty tally of tokens, cost and requests."""
    return {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "requests": 0}


def add_usage(total: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
    """Add the tally `more` into `total` (and return it)."""
    for key in ("prompt_tokens", "completion_tokens", "requests"):
        total[key] = int(total.get(key) or 0) + int(more.get(key) or 0)
    total["cost_usd"] = round(float(total.get("cost_usd") or 0.0)
                              + float(more.get("cost_usd") or 0.0), 8)
    return total


def count_usage(response, usage: dict, usd_per_1k_prompt: float,
                usd_per_1k_completion: float) -> None:
    """Add one response's tokens, at these prices, and the request to `usage`."""
    used = getattr(response, "usage", None)
    prompt_tokens = int(getattr(used, "prompt_tokens", 0) or 0)
    completion_tokens = int(getattr(used, "completion_tokens", 0) or 0)
    usage["requests"] += 1
    usage["prompt_tokens"] += prompt_tokens
    usage["completion_tokens"] += completion_tokens
    usage["cost_usd"] = round(usage["cost_usd"] + prompt_tokens / 1000 * usd_per_1k_prompt
                              + completion_tokens / 1000 * usd_per_1k_completion, 8)


def refuses_logprobs(exc) -> bool:
    """A 400/422 that names the logprobs option: the endpoint does not offer them."""
    text = f"{getattr(exc, 'message', '')} {getattr(exc, 'body', '')}".lower()
    return getattr(exc, "status_code", None) in (400, 422) and "logprob" in text


def brief_error(exc) -> str:
    """An endpoint error's message, short enough for a log line."""
    message = getattr(exc, "message", "") or str(exc)
    return message[:200]


def retry_after(exc) -> float | None:
    """The seconds a rate-limited answer's Retry-After header asks (None: none or unreadable)."""
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None
