"""Chroma: the vector store for chunks and skills.

An embedded PersistentClient under KERNELHUB_DATA_DIR/chroma by default; an HttpClient to
a Chroma server when CHROMA_URL is set (several processes write in the distributed mode,
which a PersistentClient does not allow). Vectors are always computed by us and passed
explicitly; the collections carry our own embedding function, so Chroma's default one
(which would download a model) can never run.
"""

from __future__ import annotations

import threading
from typing import Any
from urllib.parse import urlparse

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function
from django.conf import settings

CHUNKS = "kernelhub_chunks"
SKILLS = "kernelhub_skills"
COLLECTION_CONFIGURATION = {"hnsw": {"space": "cosine", "ef_search": 100}}

_clients: dict[tuple, Any] = {}
_collections: dict[tuple, Any] = {}
_lock = threading.Lock()


@register_embedding_function
class MiniLMEmbeddingFunction(EmbeddingFunction[Documents]):
    """all-MiniLM-L6-v2 from the offline package, normalized (knowledge.embeddings)."""

    def __init__(self) -> None:
        pass

    def __call__(self, input: Documents) -> Embeddings:
        from knowledge.embeddings import embed

        return list(embed(list(input)))

    @staticmethod
    def name() -> str:
        return "kernelhub-minilm"

    def get_config(self) -> dict[str, Any]:
        return {}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> "MiniLMEmbeddingFunction":
        return MiniLMEmbeddingFunction()

    def default_space(self) -> str:
        return "cosine"


def _client_key() -> tuple:
    return (settings.CHROMA_URL, str(settings.KERNELHUB_DATA_DIR))


def get_client():
    key = _client_key()
    with _lock:
        if key not in _clients:
            _clients[key] = _connect()
        return _clients[key]


def _connect():
    import chromadb
    from chromadb.config import Settings

    chroma_settings = Settings(anonymized_telemetry=False)
    if settings.CHROMA_URL:
        url = urlparse(settings.CHROMA_URL)
        return chromadb.HttpClient(
            host=url.hostname or "localhost", port=url.port or (443 if url.scheme == "https" else 8000),
            ssl=url.scheme == "https", settings=chroma_settings,
        )
    path = settings.KERNELHUB_DATA_DIR / "chroma"
    path.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(path), settings=chroma_settings)


def collection(name: str, *, fresh: bool = False):
    """The collection, created on first use; cached because asking costs a round trip."""
    key = (*_client_key(), name)
    if fresh or key not in _collections:
        _collections[key] = get_client().get_or_create_collection(
            name, embedding_function=MiniLMEmbeddingFunction(),
            configuration=COLLECTION_CONFIGURATION,
        )
    return _collections[key]


def drop(name: str) -> None:
    client = get_client()
    _collections.pop((*_client_key(), name), None)
    if name in [c.name for c in client.list_collections()]:
        client.delete_collection(name)


def clean_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Chroma metadata values cannot be None or empty lists."""
    return {k: v for k, v in metadata.items() if v is not None and v != [] and v != ""}


def add(name: str, ids: list[str], vectors: np.ndarray, metadatas: list[dict],
        documents: list[str]) -> None:
    """Add vectors under new ids. Chroma ignores an `add` for an id it already holds, so
    where an id may be reused (a row id after a rolled-back transaction or a reset
    database), use `upsert`."""
    _batched(collection(name).add, ids, vectors, metadatas, documents)


def upsert(name: str, ids: list[str], vectors: np.ndarray, metadatas: list[dict],
           documents: list[str]) -> None:
    """Write vectors under these ids, replacing whatever a stale vector of the same id held."""
    _batched(collection(name).upsert, ids, vectors, metadatas, documents)


def _batched(write, ids, vectors, metadatas, documents) -> None:
    batch = get_client().get_max_batch_size()
    for start in range(0, len(ids), batch):
        end = start + batch
        write(ids=ids[start:end], embeddings=vectors[start:end],
              metadatas=[clean_metadata(m) for m in metadatas[start:end]],
              documents=documents[start:end])


def update_metadata(name: str, ids: list[str], metadatas: list[dict]) -> None:
    """Replace the metadata of existing vectors (their embeddings stay)."""
    if not ids:
        return
    target = collection(name)
    batch = get_client().get_max_batch_size()
    for start in range(0, len(ids), batch):
        end = start + batch
        target.update(ids=ids[start:end],
                      metadatas=[clean_metadata(m) for m in metadatas[start:end]])


def delete(name: str, *, ids: list[str] | None = None, where: dict | None = None) -> None:
    if ids is not None and not ids:
        return
    collection(name).delete(ids=ids, where=where)


def count(name: str, where: dict | None = None) -> int:
    if where is None:
        return collection(name).count()
    return len(collection(name).get(where=where, include=[])["ids"])


# A filter that matches at most this many vectors is answered exactly (cosine over their stored
# embeddings) instead of by the HNSW graph: a filtered graph search walks the whole graph and
# keeps only allowed nodes, and when they are a small part of it (one team's chunks in a large
# shared store) it can stop with allowed vectors unvisited; a reader would silently miss their
# own team's pages. Brute force over a few thousand 384-d vectors costs milliseconds.
EXACT_SEARCH_LIMIT = 4096


def query(name: str, vector: np.ndarray, n: int, where: dict | None = None) -> list[tuple[str, float]]:
    """(id, cosine similarity) of the `n` nearest vectors, best first; exact when `where`
    matches at most EXACT_SEARCH_LIMIT vectors."""
    from chromadb.errors import NotFoundError

    try:
        return _query(collection(name), vector, n, where)
    except NotFoundError:  # another process re-created it (kb_reindex)
        return _query(collection(name, fresh=True), vector, n, where)


def _query(target, vector: np.ndarray, n: int, where: dict | None) -> list[tuple[str, float]]:
    if where:
        exact = _exact_query(target, vector, n, where)
        if exact is not None:
            return exact
    result = target.query(query_embeddings=[vector], n_results=n, where=where or None,
                          include=["distances"])
    return [(id_, 1.0 - dist) for id_, dist in zip(result["ids"][0], result["distances"][0])]


def _exact_query(target, vector: np.ndarray, n: int, where: dict) -> list[tuple[str, float]] | None:
    """The exact ranking of the vectors `where` selects, or None when it selects more than
    EXACT_SEARCH_LIMIT (the graph's recall is good when the allowed set is large)."""
    held = target.get(where=where, include=["embeddings"], limit=EXACT_SEARCH_LIMIT + 1)
    if len(held["ids"]) > EXACT_SEARCH_LIMIT:
        return None
    if not held["ids"]:
        return []
    stored = np.asarray(held["embeddings"], dtype=np.float64)
    query_vector = np.asarray(vector, dtype=np.float64).reshape(-1)
    norms = np.linalg.norm(stored, axis=1) * np.linalg.norm(query_vector)
    similarity = stored @ query_vector / np.where(norms > 0, norms, 1.0)
    # ties broken by id, so equal vectors come back in the same order every time
    order = sorted(range(len(held["ids"])), key=lambda i: (-similarity[i], held["ids"][i]))[:n]
    return [(held["ids"][i], float(similarity[i])) for i in order]
