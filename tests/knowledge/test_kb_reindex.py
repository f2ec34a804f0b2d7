"""kb_reindex re-chunks and re-embeds: new rows, new vectors, none of the old ones left.

The whole-collection rebuild is tested where only this test's documents exist (the
corpus, when a session fixture indexed it, would make it re-embed 800 chunks)."""

import pytest
from django.core.management import call_command

from knowledge import store
from knowledge.models import Chunk, Document


@pytest.fixture
def two_docs(kb, ingest):
    return [ingest("a.md", b"# A\n\nShared memory bank conflicts and padding.\n"),
            ingest("b.rst", b"B\n=\n\nWarp divergence costs throughput.\n")]


def check_rebuilt(documents, old_ids):
    ids = set(Chunk.objects.filter(document__in=documents).values_list("pk", flat=True))
    assert ids and not (ids & old_ids)
    for document in documents:
        document.refresh_from_db()
        assert document.chunk_count == document.chunks.count() >= 1
        stored = store.collection(store.CHUNKS).get(where={"document_id": document.pk}, include=[])["ids"]
        assert sorted(stored) == sorted(str(pk) for pk in document.chunks.values_list("pk", flat=True))
    assert not store.collection(store.CHUNKS).get(ids=[str(pk) for pk in old_ids], include=[])["ids"]


def test_kb_reindex_selected_documents(two_docs, capsys):
    old_ids = set(Chunk.objects.filter(document__in=two_docs).values_list("pk", flat=True))
    call_command("kb_reindex", "--document", str(two_docs[0].pk), "--document", str(two_docs[1].pk))
    assert capsys.readouterr().out.splitlines()[-1] == "kb_reindex: 2 documents, 2 chunks"
    check_rebuilt(two_docs, old_ids)


def test_kb_reindex_everything_rebuilds_the_collection(two_docs, capsys):
    others = Document.objects.exclude(pk__in=[d.pk for d in two_docs]).filter(status="ready")
    if others.exists():
        pytest.skip("other documents (the corpus) are indexed in this run; the selected-documents "
                    "test covers re-indexing, and this one runs in `pytest tests/knowledge/test_kb_reindex.py`")
    old_ids = set(Chunk.objects.values_list("pk", flat=True))
    store.collection(store.CHUNKS).add(ids=["stale"], embeddings=[[0.1] * 384],
                                       metadatas=[{"document_id": -1}])
    call_command("kb_reindex")
    assert capsys.readouterr().out.splitlines()[-1] == "kb_reindex: 2 documents, 2 chunks"
    check_rebuilt(two_docs, old_ids)
    assert store.count(store.CHUNKS) == 2  # the stray vector is gone too
