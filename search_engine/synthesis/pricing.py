"""What LLM tokens cost: a small table of known models, overridable from settings and flags.

Prices are USD per million tokens (prompt, completion), as vendors publish them. Overrides
come as text, one string for a settings variable or a flag::

    "gpt-4o=2.5:10, my-vllm-model=0:0"      # MODEL=PROMPT:COMPLETION, comma separated
    "0.15:0.6"                              # no model: applies to every model named

A model with no known price costs nothing (`price_for` says so with `known=False`); callers
refuse a cost budget for a model without a price rather than count $0 silently.
"""

from __future__ import annotations

from dataclasses import dataclass

# USD per 1M tokens (prompt, completion); public list prices, 2025.
KNOWN_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    "o3": (2.00, 8.00),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-3-5-haiku": (0.80, 4.00),
    "deepseek-chat": (0.27, 1.10),
    "deepseek-reasoner": (0.55, 2.19),
}
ANY_MODEL = "*"


@dataclass(frozen=True)
class Price:
    usd_per_1m_prompt: float
    usd_per_1m_completion: float
    known: bool = True

    @property
    def usd_per_1k_prompt(self) -> float:
        return self.usd_per_1m_prompt / 1000

    @property
    def usd_per_1k_completion(self) -> float:
        return self.usd_per_1m_completion / 1000

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.usd_per_1m_prompt
                + completion_tokens * self.usd_per_1m_completion) / 1_000_000


def parse_prices(text: str | None) -> dict[str, tuple[float, float]]:
    """`"model=0.15:0.6, other=1:2"` (or `"0.15:0.6"` for every model) as a dict; raises
    ValueError naming the bad entry."""
    prices: dict[str, tuple[float, float]] = {}
    for entry in (text or "").replace(";", ",").split(","):
        entry = entry.strip()
        if not entry:
            continue
        model, _, pair = entry.rpartition("=")
        try:
            prompt, completion = (float(v) for v in pair.split(":"))
        except ValueError:
            raise ValueError(f"bad LLM price {entry!r}: use MODEL=PROMPT:COMPLETION in USD "
                             "per million tokens, e.g. gpt-4o=2.5:10") from None
        if prompt < 0 or completion < 0:
            raise ValueError(f"bad LLM price {entry!r}: prices cannot be negative")
        prices[model.strip() or ANY_MODEL] = (prompt, completion)
    return prices


def price_for(model: str, overrides: dict[str, tuple[float, float]] | None = None) -> Price:
    """The price of `model`: an override, else the table (longest known prefix, so dated
    names like gpt-4o-2024-08-06 match), else unknown ($0)."""
    table = {**KNOWN_PRICES, **(overrides or {})}
    name = (model or "").strip()
    if name in table:
        return Price(*table[name])
    bare = name.rsplit("/", 1)[-1]  # openai/gpt-4o on routers
    if bare in table:
        return Price(*table[bare])
    if overrides and ANY_MODEL in overrides:
        return Price(*overrides[ANY_MODEL])
    prefixes = sorted((k for k in table if bare.startswith(k + "-")), key=len, reverse=True)
    if prefixes:
        return Price(*table[prefixes[0]])
    return Price(0.0, 0.0, known=False)
