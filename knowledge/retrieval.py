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
from knowledge.scope import KnowledgeScope, and_where

CANDIDATES = 50  # depth of each ranking before fusion
# Chroma's metadata filter ($contains on the hardware list) costs 70-100 ms at 50,000
# chunks while an unfiltered query costs ~1 ms (BENCHMARKS.md), so the hardware and
# category filters are applied here to an over-fetched ranking; only a very selective
# filter that leaves too few hits falls back to Chroma's own filtering. The team filter
# (team_id/shared metadata) always goes to Chroma: another team's vectors never come back.
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
    # Cosine similarity of the passage to the query (None: found by the word search only):
    # an absolute measure, unlike the rank-fused score, so "strong" means the same each time.
    similarity: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


class _LexicalSnapshot:
    """Every indexed chunk in one BM25 index; who may read which is decided per query."""

    MAX_MASKS = 64

    def __init__(self, generation: tuple) -> None:
        rows = list(
            Chunk.objects.order_by("pk").values_list("pk", "document_id", "text", "section",
                                                     "document__title")
        )
        self.generation = generation
        self.chunk_ids = np.asarray([r[0] for r in rows], dtype=np.int64)
        self.doc_ids = np.asarray([r[1] for r in rows], dtype=np.int64)
        self.index = BM25Index([context_text(r[4], r[3], r[2]) for r in rows])
        self._masks: dict[frozenset, tuple[np.ndarray, set[int]]] = {}
        self._lock = threading.Lock()

    def _filter(self, allowed_documents: frozenset[int]) -> tuple[np.ndarray, set[int]]:
        with self._lock:
            if allowed_documents not in self._masks:
                if len(self._masks) >= self.MAX_MASKS:
                    self._masks.clear()
                mask = np.isin(self.doc_ids, np.asarray(sorted(allowed_documents), dtype=np.int64))
                self._masks[allowed_documents] = (mask, set(self.chunk_ids[mask].tolist()))
            return self._masks[allowed_documents]

    def mask(self, allowed_documents: frozenset[int] | None) -> np.ndarray | None:
        """Which rows belong to the allowed documents (None: every row)."""
        return None if allowed_documents is None else self._filter(allowed_documents)[0]

    def allowed_ids(self, allowed_documents: frozenset[int]) -> set[int]:
        return self._filter(allowed_documents)[1]


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


def allowed_documents(scope: KnowledgeScope, hardware: str | None,
                      categories: list[str] | None) -> frozenset[int] | None:
    """The indexed documents the reader may see that pass the filters (None: all of them,
    for an operator's unfiltered query)."""
    if scope.everything and not hardware and not categories:
        return None
    indexed = (Document.objects.filter(scope.q(), status=Document.Status.READY)
               .values_list("pk", "hardware", "category"))
    return frozenset(pk for pk, tags, category in indexed
                     if _matches(set(tags or []), category, hardware, categories))


def _vector_ranking(vector: np.ndarray, snapshot: _LexicalSnapshot, scope: KnowledgeScope,
                    hardware: str | None, categories: list[str] | None,
                    allowed: frozenset[int] | None) -> list[tuple[int, float]]:
    """(chunk id, cosine similarity) nearest to `vector`, best first. Chroma itself filters
    by the scope (team_id/shared metadata), so another team's chunks never come back; the
    cheaper hardware/category filters are applied here to an over-fetched ranking, falling
    back to Chroma's own."""
    depth = min(CANDIDATES, snapshot.index.size)
    scope_where = scope.chroma_where()
    if allowed is None:
        return [(int(id_), sim) for id_, sim in store.query(store.CHUNKS, vector, depth,
                                                           where=scope_where)]
    allowed_chunks = snapshot.allowed_ids(allowed)
    if not allowed_chunks:
        return []
    if not hardware and not categories:
        hits = store.query(store.CHUNKS, vector, depth, where=scope_where)
        return [(int(id_), sim) for id_, sim in hits if int(id_) in allowed_chunks]
    hits = store.query(store.CHUNKS, vector, min(depth * VECTOR_OVERFETCH, snapshot.index.size),
                       where=scope_where)
    ranked = [(int(id_), sim) for id_, sim in hits if int(id_) in allowed_chunks][:depth]
    if len(ranked) < min(len(allowed_chunks), MIN_FILTERED_HITS):
        where = and_where(chroma_where(hardware, categories), scope_where)
        ranked = [(int(id_), sim) for id_, sim in store.query(store.CHUNKS, vector, depth,
                                                              where=where)
                  if int(id_) in allowed_chunks]
    return ranked


def retrieve(query: str, hardware: str | None = None, categories: list[str] | None = None,
             k: int = 5, *, scope: KnowledgeScope) -> list[RetrievedChunk]:
    """The `k` chunks that best answer `query`, from documents in `scope` tagged `hardware`
    (plus vendor-neutral ones tagged "generic") in `categories`; best first.

    `scope` is required: pages, the API and sessions pass the reader's
    (knowledge.scope.KnowledgeScope); operator tools pass KnowledgeScope.ALL."""
    if not isinstance(scope, KnowledgeScope):
        raise TypeError("retrieve() needs a KnowledgeScope (KnowledgeScope.ALL for operator tools)")
    query = query.strip()
    if not query or k <= 0:
        return []
    hardware = hardware.strip().lower() if hardware else None
    categories = _check_categories(categories)
    snapshot = lexical_snapshot()
    if snapshot.index.size == 0:
        return []
    allowed = allowed_documents(scope, hardware, categories)
    if allowed is not None and not allowed:
        return []
    lexical = [int(snapshot.chunk_ids[row])
               for row, _ in snapshot.index.top(query, CANDIDATES, snapshot.mask(allowed))]
    nearest = _vector_ranking(embed_query(query), snapshot, scope, hardware, categories, allowed)
    similarity = dict(nearest)
    fused = reciprocal_rank_fusion([[chunk_id for chunk_id, _ in nearest], lexical])
    rows = Chunk.objects.select_related("document").in_bulk([cid for cid, _ in fused[: k * 2]])
    visible = Document.objects.filter(scope.q())  # the database has the last word
    visible_ids = set(visible.filter(pk__in={c.document_id for c in rows.values()})
                      .values_list("pk", flat=True))
    results = []
    for chunk_id, score in fused:
        chunk = rows.get(chunk_id)
        if chunk is None or chunk.document_id not in visible_ids:  # gone, or not the reader's
            continue
        doc = chunk.document
        results.append(RetrievedChunk(
            chunk_id=chunk.pk, document_id=doc.pk, document=doc.title, filename=doc.filename,
            text=chunk.text, score=round(score, 6), page=chunk.page, section=chunk.section,
            vendor=doc.vendor, hardware=list(doc.hardware), category=doc.category,
            similarity=round(similarity[chunk_id], 4) if chunk_id in similarity else None,
        ))
        if len(results) == k:
            break
    return results
