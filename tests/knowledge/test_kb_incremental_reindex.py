"""Incremental re-index: a changed document or a new embedding model re-embeds only what
changed (content hash per chunk, model id per document)."""

import numpy as np
import pytest

from knowledge import embeddings, ingestion, store
from knowledge.errors import KnowledgeInputError
from knowledge.models import Chunk, Document
from knowledge.services import document_replace_file, documents_reindex

SECTIONS = ["Coalescing", "Bank conflicts", "Divergence", "Occupancy", "Spills", "Tiling"]


def manual(changed: str | None = None) -> bytes:
    parts = []
    for name in SECTIONS:
        body = " ".join(f"{name} sentence {i} about GPU kernels." for i in range(25))
        if name == changed:
            body = "This section was rewritten: persistent kernels and stream-K. " * 10
        parts.append(f"## {name}\n\n{body}\n")
    return ("# Manual\n\n" + "\n".join(parts)).encode()


@pytest.fixture
def embedded(monkeypatch):
    """Texts the model is asked to embed during the test."""
    calls: list[str] = []
    real = ingestion.embed

    def counting(texts):
        calls.extend(texts)
        return real(texts)

    monkeypatch.setattr(ingestion, "embed", counting)
    return calls


def vectors_of(document):
    ids = [str(pk) for pk in document.chunks.order_by("ordinal").values_list("pk", flat=True)]
    got = store.collection(store.CHUNKS).get(ids=ids, include=["embeddings"])
    by_id = dict(zip(got["ids"], got["embeddings"]))
    return [np.asarray(by_id[i]) for i in ids]


def test_unchanged_document_is_not_embedded_again(kb, ingest, embedded, capsys):
    document = ingest("manual.md", manual())
    assert document.embedding_model == embeddings.model_id()
    assert len(set(document.chunks.values_list("content_hash", flat=True))) == document.chunk_count
    embedded.clear()
    before = vectors_of(document)
    documents_reindex(document_ids=[document.pk], output=print)
    assert embedded == []
    assert f"reindexed manual.md: {document.chunk_count} chunks, 0 embedded" in capsys.readouterr().out
    document.refresh_from_db()
    after = vectors_of(document)
    assert len(after) == len(before) and all(np.allclose(a, b) for a, b in zip(after, before))


def test_a_new_model_re_embeds_everything(kb, ingest, embedded):
    document = ingest("model.md", manual())
    Document.objects.filter(pk=document.pk).update(embedding_model="some-older-model")
    embedded.clear()
    documents_reindex(document_ids=[document.pk])
    document.refresh_from_db()
    assert len(embedded) == document.chunk_count
    assert document.embedding_model == embeddings.model_id()


def test_changed_document_re_embeds_only_changed_chunks(kb, ingest, embedded):
    document = ingest("changing.md", manual())
    total = document.chunk_count
    embedded.clear()
    document = document_replace_file(document, data=manual(changed="Divergence"))
    assert 0 < len(embedded) < total / 2
    assert all("Divergence" in text or "rewritten" in text for text in embedded)
    texts = " ".join(document.chunks.values_list("text", flat=True))
    assert "stream-K" in texts and "Divergence sentence 3" not in texts
    assert document.progress_detail["chunks_reused"] == document.chunk_count - len(embedded)
    stored = store.collection(store.CHUNKS).get(where={"document_id": document.pk}, include=[])["ids"]
    assert sorted(stored) == sorted(str(pk) for pk in document.chunks.values_list("pk", flat=True))


def test_bad_new_version_changes_nothing(kb, ingest):
    document = ingest("keep.md", manual())
    ids = set(Chunk.objects.filter(document=document).values_list("pk", flat=True))
    with pytest.raises(KnowledgeInputError, match="empty"):
        document_replace_file(document, data=b"   \n")
    document.refresh_from_db()
    assert document.status == Document.Status.READY
    assert set(document.chunks.values_list("pk", flat=True)) == ids
    assert (document.stored_path and
            (__import__("django.conf").conf.settings.KERNELHUB_DATA_DIR / document.stored_path).exists())
