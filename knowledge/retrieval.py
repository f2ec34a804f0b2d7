"""Hybrid retrieval: BM25 and vector search, fused by reciprocal rank.

Engineers ask with exact identifiers (wgmma, gfx942, num_stages) that a small embedding
model blurs, and in plain words that BM25 misses; fusing both ranks finds either. The BM25
index lives in memory, rebuilt when the set of chunks changes (checked per query with one
cheap aggregate), so every process sees what the others indexed.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass

import numpy as np
from django.db.models import Count, Max, Sum

from knowledge import store
from knowledge.embeddings import embed_query
from knowledge.errors import KnowledgeInputError
from knowledge.fusion import reciprocal_rank_fusion
from knowledge.lexical import BM25Index
from knowledge.models import GENERIC_HARDWARE, Category, Chunk, Document
from knowledge.retrieval_text import context_text

CANDIDATES = 50  # depth of each ranking before fusion
# Chroma's metadata filter ($contains on the hardware list) costs 70-100 ms at 50,000
# chunks while an unfiltered query costs ~1 ms (BENCHMARKS.md), so filters are applied
# here to an over-fetched unfiltered ranking; only a very selective filter that leaves
# too few hits falls back to Chroma's own filtering.
VECTOR_OVERFETCH = 4
MIN_FILTERED_HITS = 20


@dataclass
class RetrievedChunk:
    chunk_id: int
    document_id: int
    document: str  # title
    filename: str
    text: str
    score: float  # fused reciprocal-rank score; higher is better
    page: int | None
    section: str
    vendor: str
    hardware: list[str]
    category: str

    def to_dict(self) -> dict:
        return asdict(self)


class _LexicalSnapshot:
    def __init__(self, generation: tuple) -> None:
        rows = list(
            Chunk.objects.order_by("pk").values_list(
                "pk", "document_id", "text", "section", "document__title",
                "document__hardware", "document__category",
            )
        )
        self.generation = generation
        self.chunk_ids = np.asarray([r[0] for r in rows], dtype=np.int64)
        self.doc_ids = np.asarray([r[1] for r in rows], dtype=np.int64)
        self.index = BM25Index([context_text(r[4], r[3], r[2]) for r in rows])
        self.documents = {r[1]: (set(r[5] or []), r[6]) for r in rows}
        self._masks: dict[tuple, tuple[np.ndarray, set[int]]] = {}

    def _filter(self, hardware: str | None, categories: list[str] | None):
        key = (hardware, tuple(sorted(categories or ())))
        if key not in self._masks:
            allowed = [doc for doc, (tags, category) in self.documents.items()
                       if _matches(tags, category, hardware, categories)]
            mask = np.isin(self.doc_ids, np.asarray(allowed, dtype=np.int64))
            self._masks[key] = (mask, set(self.chunk_ids[mask].tolist()))
        return self._masks[key]

    def mask(self, hardware: str | None, categories: list[str] | None) -> np.ndarray | None:
        """Which rows pass the filters (None: no filter)."""
        if not hardware and not categories:
            return None
        return self._filter(hardware, categories)[0]

    def allowed_ids(self, hardware: str | None, categories: list[str] | None) -> set[int]:
        return self._filter(hardware, categories)[1]


_snapshot: _LexicalSnapshot | None = None
_snapshot_lock = threading.Lock()


def _generation() -> tuple:
    """Changes whenever the set of indexed chunks does: a document becoming ready or
    re-indexed sets indexed_at; deleting one lowers the count. Aggregating the small
    document table costs well under a millisecond; counting 50,000 chunks costs 5 ms."""
    stats = Document.objects.filter(status=Document.Status.READY).aggregate(
        n=Count("pk"), last=Max("indexed_at"), chunks=Sum("chunk_count"), top=Max("pk"))
    return tuple(stats.values())


def lexical_snapshot() -> _LexicalSnapshot:
    global _snapshot
    generation = _generation()
    with _snapshot_lock:
        if _snapshot is None or _snapshot.generation != generation:
            _snapshot = _LexicalSnapshot(generation)
        return _snapshot


def _matches(tags: set[str], category: str, hardware: str | None,
             categories: list[str] | None) -> bool:
    if hardware and not ({hardware, GENERIC_HARDWARE} & tags):
        return False
    return not categories or category in categories


def chroma_where(hardware: str | None, categories: list[str] | None) -> dict | None:
    clauses = []
    if hardware:
        clauses.append({"$or": [{"hardware": {"$contains": hardware}},
                                {"hardware": {"$contains": GENERIC_HARDWARE}}]})
    if categories:
        clauses.append({"category": {"$in": list(categories)}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _check_categories(categories: list[str] | None) -> list[str] | None:
    if not categories:
        return None
    unknown = [c for c in categories if c not in Category.values]
    if unknown:
        raise KnowledgeInputError(
            f"Unknown category {', '.join(unknown)}; use one of {', '.join(Category.values)}."
        )
    return list(categories)


def _vector_ranking(vector: np.ndarray, snapshot: _LexicalSnapshot, hardware: str | None,
                    categories: list[str] | None) -> list[int]:
    depth = min(CANDIDATES, snapshot.index.size)
    if not hardware and not categories:
        return [int(id_) for id_, _ in store.query(store.CHUNKS, vector, depth)]
    allowed = snapshot.allowed_ids(hardware, categories)
    if not allowed:
        return []
    hits = store.query(store.CHUNKS, vector, min(depth * VECTOR_OVERFETCH, snapshot.index.size))
    ranked = [int(id_) for id_, _ in hits if int(id_) in allowed][:depth]
    if len(ranked) < min(len(allowed), MIN_FILTERED_HITS):
        where = chroma_where(hardware, categories)
        ranked = [int(id_) for id_, _ in store.query(store.CHUNKS, vector, depth, where=where)]
    return ranked


def retrieve(query: str, hardware: str | None = None, categories: list[str] | None = None,
             k: int = 5) -> list[RetrievedChunk]:
    """The `k` chunks that best answer `query`, from documents tagged `hardware` (plus
    vendor-neutral ones tagged "generic") in `categories`; best first."""
    query = query.strip()
    if not query or k <= 0:
        return []
    hardware = hardware.strip().lower() if hardware else None
    categories = _check_categories(categories)
    snapshot = lexical_snapshot()
    if snapshot.index.size == 0:
        return []
    lexical = [int(snapshot.chunk_ids[row])
               for row, _ in snapshot.index.top(query, CANDIDATES, snapshot.mask(hardware, categories))]
    vector = _vector_ranking(embed_query(query), snapshot, hardware, categories)
    fused = reciprocal_rank_fusion([vector, lexical])
    rows = Chunk.objects.select_related("document").in_bulk([cid for cid, _ in fused[: k * 2]])
    results = []
    for chunk_id, score in fused:
        chunk = rows.get(chunk_id)
        if chunk is None:  # a vector whose row is gone (deleted meanwhile)
            continue
        doc = chunk.document
        results.append(RetrievedChunk(
            chunk_id=chunk.pk, document_id=doc.pk, document=doc.title, filename=doc.filename,
            text=chunk.text, score=round(score, 6), page=chunk.page, section=chunk.section,
            vendor=doc.vendor, hardware=list(doc.hardware), category=doc.category,
        ))
        if len(results) == k:
            break
    return results
