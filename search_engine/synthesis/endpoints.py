"""Building the LLM synthesizer from settings or flags, the same way in the CLI and the web.

One setting names the model(s): ``LLM_MODEL`` (``KERNELHUB_LLM_MODEL`` and ``OPENAI_MODEL``
are read as aliases, in that order). It may list several, comma separated, each optionally
on its own endpoint: ``gpt-4o-mini, qwen2.5-coder@http://vllm:8000/v1``. Several models make
a `MultiLLMSynthesizer` (bandit.py); the API key is sent only to models on the configured
endpoint's origin. Prices come from pricing.py's table and overrides.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MODEL_ENV_NAMES = ("LLM_MODEL", "KERNELHUB_LLM_MODEL", "OPENAI_MODEL")
DEFAULT_MODEL = "gpt-4o-mini"


def model_setting(environ: Mapping[str, str]) -> str:
    """The model setting's text from the environment (first alias set wins)."""
    for name in MODEL_ENV_NAMES:
        value = (environ.get(name) or "").strip()
        if value:
            return value
    return DEFAULT_MODEL


def parse_models(text: str | list[str] | None) -> list[tuple[str, str | None]]:
    """[(model, base_url or None)] from "a, b@http://host/v1" (or a list of such)."""
    items = text if isinstance(text, (list, tuple)) else (text or "").split(",")
    models = []
    for item in items:
        item = str(item).strip()
        if not item:
            continue
        model, _, url = item.partition("@")
        models.append((model.strip(), url.strip() or None))
    return models or [(DEFAULT_MODEL, None)]


def unpriced_models(models: list[tuple[str, str | None]], prices: dict | None) -> list[str]:
    from search_engine.synthesis.pricing import price_for

    return [m for m, _ in models if not price_for(m, prices).known]


def make_llm_synthesizer(base_url: str, models: str | list, api_key: str = "none",
                         prices: dict | None = None, **config: Any):
    """One LLMSynthesizer, or a MultiLLMSynthesizer over several models."""
    from search_engine.synthesis.llm import LLMConfig, LLMSynthesizer

    parsed = parse_models(models)
    synthesizers = [LLMSynthesizer(LLMConfig.priced(
        url or base_url, model, prices,
        # the key goes only to the configured endpoint, never to another origin
        api_key=(api_key or "none") if _same_origin(url or base_url, base_url) else "none",
        **config)) for model, url in parsed]
    if len(synthesizers) == 1:
        return synthesizers[0]
    from search_engine.synthesis.bandit import MultiLLMSynthesizer

    return MultiLLMSynthesizer(synthesizers)


def _same_origin(a: str, b: str) -> bool:
    from urllib.parse import urlsplit

    x, y = urlsplit(a or ""), urlsplit(b or "")
    return (x.scheme, x.hostname, x.port) == (y.scheme, y.hostname, y.port)
