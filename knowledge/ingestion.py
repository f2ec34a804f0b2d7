"""From stored bytes to embedded chunks, without writing anything (services write).

Progress is reported as facts, not guesses: pages parsed of the file's pages, chunks
embedded of the chunks to embed, and the time left at the rate measured so far. The
reporter may raise (a cancelled document) to stop the work between two steps.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from knowledge.chunking import ChunkDraft, ChunkingConfig, chunk_blocks
from knowledge.embeddings import dimension, embed, token_counts
from knowledge.parsing import parse_bytes
from knowledge.retrieval_text import context_text

# Chosen by measurement on the labelled corpus (BENCHMARKS.md, "Knowledge base").
CHUNKING = ChunkingConfig(max_tokens=230, overlap_tokens=50, min_section_tokens=60)
EMBED_BATCH = 64  # chunks per progress step (the encoder batches by length inside)

# Share of the progress bar per stage: embedding is most of the time on a CPU.
PARSE_SHARE, EMBED_START, EMBED_END = 30, 32, 92


@dataclass
class IngestProgress:
    stage: str = "parsing"
    pages_done: int = 0
    pages_total: int | None = None
    chunks_done: int = 0
    chunks_total: int | None = None
    chunks_reused: int = 0
    eta_s: float | None = None
    failed_pages: list[tuple[int, str]] = field(default_factory=list)

    def percent(self) -> int:
        if self.stage == "parsing":
            share = self.pages_done / self.pages_total if self.pages_total else 0
            return 1 + int((PARSE_SHARE - 1) * share)
        if self.stage == "embedding" and self.chunks_total:
            return EMBED_START + int((EMBED_END - EMBED_START) * self.chunks_done / self.chunks_total)
        return {"chunking": PARSE_SHARE, "embedding": EMBED_START}.get(self.stage, EMBED_END)

    def message(self) -> str:
        if self.stage == "parsing":
            of = f"/{self.pages_total}" if self.pages_total else ""
            text = f"Parsing: {self.pages_done}{of} pages"
        elif self.stage == "chunking":
            text = "Chunking"
        else:
            text = f"Embedding: {self.chunks_done}/{self.chunks_total} chunks"
            if self.chunks_reused:
                text += f" ({self.chunks_reused} unchanged, reused)"
        if self.eta_s is not None:
            text += f", about {max(1, round(self.eta_s))} s left"
        return text

    def to_dict(self) -> dict:
        return {"stage": self.stage, "pages_done": self.pages_done,
                "pages_total": self.pages_total, "chunks_done": self.chunks_done,
                "chunks_total": self.chunks_total, "chunks_reused": self.chunks_reused,
                "eta_s": None if self.eta_s is None else round(self.eta_s, 1),
                "failed_pages": [list(p) for p in self.failed_pages]}


Reporter = Callable[[IngestProgress], None]


@dataclass
class PreparedDocument:
    title: str
    pages: int | None
    chunks: list[ChunkDraft]
    vectors: np.ndarray
    hashes: list[str] = field(default_factory=list)  # chunk_hash of each chunk
    reused: int = 0  # chunks whose vector came from `known_vectors`
    failed_pages: list[tuple[int, str]] = field(default_factory=list)


def chunk_hash(embedded_text: str) -> str:
    return hashlib.sha256(embedded_text.encode("utf-8")).hexdigest()


def prepare(name: str, data: bytes, kind: str, *, max_pdf_pages: int,
            report: Reporter = lambda progress: None,
            known_vectors: dict[str, np.ndarray] | None = None) -> PreparedDocument:
    """Parse, chunk and embed; raises KnowledgeInputError for bad content.

    `known_vectors` maps chunk_hash -> vector of the same model (the document's current
    chunks): those chunks are not embedded again.
    """
    progress = IngestProgress()
    report(progress)
    parsed = parse_bytes(name, data, kind, max_pdf_pages=max_pdf_pages,
                         on_page=_page_reporter(progress, report))
    progress.failed_pages = list(parsed.failed_pages)
    title = parsed.title or name
    progress.stage, progress.eta_s = "chunking", None
    report(progress)
    chunks = chunk_blocks(parsed.blocks, token_counts, CHUNKING)
    texts = [context_text(title, c.section, c.text) for c in chunks]
    hashes = [chunk_hash(t) for t in texts]
    vectors = _embed_new(texts, hashes, known_vectors or {}, progress, report)
    return PreparedDocument(title[:300], parsed.pages, chunks, vectors, hashes,
                            progress.chunks_reused, progress.failed_pages)


def _page_reporter(progress: IngestProgress, report: Reporter):
    started = time.monotonic()

    def on_page(done: int, total: int) -> None:
        progress.pages_done, progress.pages_total = done, total or None
        elapsed = time.monotonic() - started
        progress.eta_s = elapsed / done * (total - done) if done and total else None
        report(progress)

    return on_page


def _embed_new(texts: list[str], hashes: list[str], known: dict[str, np.ndarray],
               progress: IngestProgress, report: Reporter) -> np.ndarray:
    vectors = np.zeros((len(texts), dimension()), dtype=np.float32)
    missing = []
    for row, key in enumerate(hashes):
        if key in known:
            vectors[row] = known[key]
        else:
            missing.append(row)
    progress.stage, progress.eta_s = "embedding", None
    progress.chunks_total, progress.chunks_reused = len(texts), len(texts) - len(missing)
    progress.chunks_done = progress.chunks_reused
    report(progress)
    started = time.monotonic()
    for start in range(0, len(missing), EMBED_BATCH):
        rows = missing[start : start + EMBED_BATCH]
        vectors[rows] = embed([texts[r] for r in rows])
        embedded = start + len(rows)
        progress.chunks_done = progress.chunks_reused + embedded
        rate = embedded / max(time.monotonic() - started, 1e-6)
        progress.eta_s = (len(missing) - embedded) / rate
        report(progress)
    return vectors
