"""From stored bytes to embedded chunks, without writing anything (services write)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from knowledge.chunking import ChunkDraft, ChunkingConfig, chunk_blocks
from knowledge.embeddings import embed, token_counts
from knowledge.parsing import parse_bytes
from knowledge.retrieval_text import context_text

# Chosen by measurement on the labelled corpus (BENCHMARKS.md, "Knowledge base").
CHUNKING = ChunkingConfig(max_tokens=230, overlap_tokens=50, min_section_tokens=60)
EMBED_BATCH = 32

Progress = Callable[[int, str], None]


@dataclass
class PreparedDocument:
    title: str
    pages: int | None
    chunks: list[ChunkDraft]
    vectors: np.ndarray


def prepare(name: str, data: bytes, kind: str, *, max_pdf_pages: int,
            progress: Progress = lambda pct, msg: None) -> PreparedDocument:
    """Parse, chunk and embed; raises KnowledgeInputError for bad content."""
    progress(5, "Parsing")
    parsed = parse_bytes(name, data, kind, max_pdf_pages=max_pdf_pages)
    title = parsed.title or name
    progress(15, "Chunking")
    chunks = chunk_blocks(parsed.blocks, token_counts, CHUNKING)
    texts = [context_text(title, c.section, c.text) for c in chunks]
    vectors = []
    for start in range(0, len(texts), EMBED_BATCH):
        vectors.append(embed(texts[start : start + EMBED_BATCH]))
        done = min(start + EMBED_BATCH, len(texts))
        progress(15 + int(75 * done / len(texts)), f"Embedding {done}/{len(texts)} chunks")
    return PreparedDocument(title[:300], parsed.pages, chunks, np.concatenate(vectors))
