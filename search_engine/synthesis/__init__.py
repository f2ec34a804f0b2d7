"""Synthesizers: they write candidate kernels for the search.

- `offline.OfflineSynthesizer`: torch.fx over the reference plus Triton templates (no LLM).
- `llm.LLMSynthesizer`: any OpenAI-compatible endpoint.
"""

from search_engine.synthesis.base import (
    MemoryView, NodeView, NotCoveredError, Proposal, SynthesisError, SynthesisRequest,
    Synthesizer,
)

__all__ = ["MemoryView", "NodeView", "NotCoveredError", "Proposal", "SynthesisError",
           "SynthesisRequest", "Synthesizer"]
