"""Progress of long documents tells the truth (pages parsed, chunks embedded, time left),
a cancel stops indexing, and a page that cannot be read does not fail the document."""

import zlib

import pytest

from knowledge import ingestion
from knowledge.services import indexing
from knowledge.errors import KnowledgeInputError
from knowledge.ingestion import IngestProgress, prepare
from knowledge.models import Chunk, Document
from knowledge.parsing.pdf import parse_pdf
from knowledge.services import document_cancel, document_process, document_upload

TOPICS = ["shared memory bank conflicts", "warp divergence", "tensor core tiles",
          "global memory coalescing", "register spills", "occupancy limits"]


def manual_pages(count: int) -> list[list[str]]:
    """Text-heavy pages: each a different topic, long enough to make several chunks."""
    return [[f"Page {i}: {TOPICS[i % len(TOPICS)]} matter for kernel speed in case {i}."
             for _ in range(30)] for i in range(count)]


def bomb_stream() -> bytes:
    compressor = zlib.compressobj(9)
    return b"".join(compressor.compress(b" " * 1_000_000) for _ in range(200)) + compressor.flush()


def test_parallel_pdf_workers_agree_with_one_and_report_every_page(pdfs):
    data = pdfs.make(manual_pages(9))
    seen = []
    one = parse_pdf("m.pdf", data, max_pages=100, workers=1)
    three = parse_pdf("m.pdf", data, max_pages=100, workers=3,
                      on_page=lambda done, total: seen.append((done, total)))
    assert [(b.text, b.page) for b in three.blocks] == [(b.text, b.page) for b in one.blocks]
    assert three.pages == 9
    assert seen == [(i, 9) for i in range(1, 10)]


def test_progress_counts_pages_then_chunks_with_time_left(pdfs):
    snapshots: list[dict] = []
    prepared = prepare("m.pdf", pdfs.make(manual_pages(6)), "pdf", max_pdf_pages=100,
                       report=lambda p: snapshots.append(p.to_dict() | {"pct": p.percent()}))
    parsing = [s for s in snapshots if s["stage"] == "parsing" and s["pages_done"]]
    assert [s["pages_done"] for s in parsing] == [1, 2, 3, 4, 5, 6]
    assert all(s["pages_total"] == 6 for s in parsing)
    embedding = [s for s in snapshots if s["stage"] == "embedding"]
    assert embedding[-1]["chunks_done"] == embedding[-1]["chunks_total"] == len(prepared.chunks)
    assert embedding[-1]["eta_s"] == 0  # measured rate, nothing left
    percents = [s["pct"] for s in snapshots]
    assert percents == sorted(percents)  # never goes backwards
    assert len(prepared.chunks) > 6  # several chunks per page: the counts are not pages


def test_document_shows_pages_and_chunks_when_done(kb, pdfs):
    document = document_upload(filename="manual.pdf", data=pdfs.make(manual_pages(4)),
                               category="general-optimization")
    document = document_process(document.pk)
    assert document.status == Document.Status.READY
    detail = document.progress_detail
    assert detail["stage"] == "done" and detail["pages_total"] == 4
    assert detail["chunks_total"] == document.chunk_count == document.chunks.count()
    assert detail["failed_pages"] == []


def test_a_page_that_cannot_be_read_does_not_fail_the_document(kb, pdfs):
    pages = [["Bomb page."], ["Shared memory bank conflicts and padding."], ["Third page."]]
    data = pdfs.make(pages, extra_stream=bomb_stream())  # page 1 inflates past the limit
    document = document_process(document_upload(filename="partly.pdf", data=data,
                                                category="general-optimization").pk)
    assert document.status == Document.Status.READY
    texts = " ".join(Chunk.objects.filter(document=document).values_list("text", flat=True))
    assert "Shared memory bank conflicts" in texts and "Third page" in texts
    assert [p for p, _ in document.progress_detail["failed_pages"]] == [1]
    assert "1 page(s) could not be read and are not searchable: 1" in document.message
    assert "safety limits" in document.message


def test_cancel_stops_indexing_and_keeps_nothing(kb, pdfs, monkeypatch):
    document = document_upload(filename="cancel.pdf", data=pdfs.make(manual_pages(5)),
                               category="general-optimization")
    real_embed = ingestion.embed

    def embed_then_cancel(texts):
        # The user presses "Cancel" while the first batch is being embedded.
        Document.objects.filter(pk=document.pk).update(cancel_requested=True)
        return real_embed(texts)

    monkeypatch.setattr(ingestion, "embed", embed_then_cancel)
    monkeypatch.setattr(ingestion, "EMBED_BATCH", 2)
    monkeypatch.setattr(indexing, "PROGRESS_INTERVAL_S", 0)  # every report checks
    document = document_process(document.pk)
    assert document.status == Document.Status.FAILED
    assert document.message == "Indexing cancelled"
    assert not document.cancel_requested
    assert not Chunk.objects.filter(document=document).exists()
    from knowledge import store
    assert store.count(store.CHUNKS, where={"document_id": document.pk}) == 0


def test_cancel_service_checks_role_and_state(kb, ingest):
    ready = ingest("done.md", b"# Done\n\nAlready indexed text about warps.\n")
    with pytest.raises(KnowledgeInputError, match="nothing to cancel"):
        document_cancel(ready)
    waiting = document_upload(filename="wait.md", data=b"# W\n\nWaiting text.\n",
                              category="general-optimization")
    assert document_cancel(waiting).cancel_requested
    document = document_process(waiting.pk)  # the worker picks it up after the cancel
    assert document.status == Document.Status.FAILED and document.message == "Indexing cancelled"


def test_progress_message_names_pages_chunks_and_time():
    progress = IngestProgress(stage="parsing", pages_done=120, pages_total=700, eta_s=14.2)
    assert progress.message() == "Parsing: 120/700 pages, about 14 s left"
    progress = IngestProgress(stage="embedding", chunks_done=300, chunks_total=2100,
                              chunks_reused=100, eta_s=30)
    assert progress.message() == "Embedding: 300/2100 chunks (100 unchanged, reused), about 30 s left"


def test_progress_fragment_shows_pages_chunks_time_left_and_cancel(kb, client, teams):
    from django.urls import reverse

    client.force_login(teams["users"][("alpha", "engineer")])
    document = document_upload(filename="long.md", data=b"# L\n\nLong manual text.\n",
                               category="general-optimization", team=teams["alpha"],
                               user=teams["users"][("alpha", "engineer")])
    progress = IngestProgress(stage="embedding", pages_done=700, pages_total=700,
                              chunks_done=300, chunks_total=2100, eta_s=42)
    Document.objects.filter(pk=document.pk).update(
        status="processing", progress=progress.percent(), message=progress.message(),
        progress_detail=progress.to_dict())
    url = reverse("knowledge:document_progress", args=[document.pk])
    page = client.get(url + "?detail=1").content.decode()
    assert "700 / 700" in page and "300 / 2100" in page and "about 42 s" in page
    assert "Cancel indexing" in page
    cancel = reverse("knowledge:document_cancel", args=[document.pk])
    client.force_login(teams["users"][("alpha", "viewer")])
    assert client.post(cancel).status_code == 403
    client.force_login(teams["users"][("alpha", "engineer")])
    assert client.post(cancel).status_code == 302
    document.refresh_from_db()
    assert document.cancel_requested and "Cancel indexing" not in client.get(url + "?detail=1").content.decode()


def test_a_locked_progress_row_is_written_once_the_lock_goes(kb, monkeypatch):
    """While the page polls, SQLite may answer a write with "table is locked" at once; the
    background indexing must not die of it (the document would stay "Waiting")."""
    from django.db import OperationalError
    from django.db.models import QuerySet

    from knowledge.models import Document
    from knowledge.services import document_upload
    from knowledge.services import indexing

    document = document_upload(filename="lock.md", data=b"# Lock\n\nText.\n",
                               category="general-optimization")
    real_update, calls = QuerySet.update, []

    def locked_twice(self, **kwargs):
        calls.append(kwargs)
        if len(calls) <= 2:
            raise OperationalError("database table is locked: knowledge_document")
        return real_update(self, **kwargs)

    monkeypatch.setattr(QuerySet, "update", locked_twice)
    monkeypatch.setattr(indexing.time, "sleep", lambda s: None)
    indexing.set_progress(document.pk, 7, "Parsing")
    monkeypatch.setattr(QuerySet, "update", real_update)
    document.refresh_from_db()
    assert (document.progress, document.message, len(calls)) == (7, "Parsing", 3)
