"""The offline synthesizer: real Triton kernels from templates, no LLM (see synthesizer.py)."""

from search_engine.synthesis.offline.synthesizer import OfflineSynthesizer

__all__ = ["OfflineSynthesizer"]
