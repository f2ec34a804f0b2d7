"""Indexing runs in the background (a thread in the embedded default) and the progress
fragment shows it finishing; the Celery task is used in the distributed mode."""

import threading
import time

from django.db import connection
from django.urls import reverse

from knowledge import tasks
from knowledge.models import Document


def test_upload_is_indexed_in_a_background_thread(transactional_db, client, pdfs):
    from django.contrib.auth import get_user_model
    from django.core.files.uploadedfile import SimpleUploadedFile

    from kernelhub.teams.services import membership_set, team_create
    from knowledge import store

    user = get_user_model().objects.create_user("eng", password="x")
    membership_set(team=team_create(name="gamma"), user=user, role="engineer")
    client.force_login(user)
    pdf = pdfs.with_outline(pdfs.make([["Waves", f"Line {i} about wavefront occupancy."] for i in range(3)]),
                            [("Waves", 0)])
    response = client.post(reverse("knowledge:document_upload"), {
        "file": SimpleUploadedFile("waves.pdf", pdf), "category": "hardware-specific",
        "vendor": "amd", "hardware": "mi300x", "title": "Waves manual"})
    assert response.status_code == 302
    document = Document.objects.get(filename="waves.pdf")
    url = reverse("knowledge:document_progress", args=[document.pk])
    seen = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        html = client.get(url).content.decode()
        seen.append(html)
        if "hx-trigger" not in html:
            break
        time.sleep(0.2)
    assert "Ready" in seen[-1] and "100%" in seen[-1], seen[-1]
    document.refresh_from_db()
    assert document.status == "ready" and document.title == "Waves manual" and document.pages == 3
    assert store.count(store.CHUNKS, where={"document_id": document.pk}) == document.chunk_count > 0
    store.delete(store.CHUNKS, where={"document_id": document.pk})


def test_distributed_mode_uses_the_celery_task(kb, settings, monkeypatch,
                                              django_capture_on_commit_callbacks):
    sent = []
    monkeypatch.setattr(tasks.ingest_document_task, "apply_async",
                        lambda args, queue: sent.append((args, queue)))
    settings.KERNELHUB_EXECUTOR = "celery"
    with django_capture_on_commit_callbacks(execute=True):
        tasks.enqueue_ingest(41)
    assert sent == [([41], "search")]


def test_celery_task_indexes_the_document(kb):
    from knowledge.services import document_upload

    document = document_upload(filename="task.md", data=b"# Task\n\nIndexed by the Celery task.\n",
                               category="general-optimization")
    tasks.ingest_document_task.apply(args=[document.pk]).get()
    document.refresh_from_db()
    assert document.status == "ready" and document.chunk_count == 1


def test_a_background_writer_waits_for_readers(transactional_db):
    """Indexing writes its progress row from a thread while pages read it. On SQLite the
    writer must wait its turn (the busy timeout), never fail with "table is locked": the
    embedded database, and the tests' one, are files in WAL mode, not a shared-cache
    in-memory database, where such a write fails at once."""
    doc = Document.objects.create(filename="a.md", title="a", kind="markdown", size_bytes=1,
                                  content_hash="0" * 64, stored_path="a.md",
                                  category="general-optimization")
    errors = []

    def writer():
        try:
            for i in range(100):
                Document.objects.filter(pk=doc.pk).update(progress=i, message=str(i))
        except Exception as exc:  # noqa: BLE001 - the assertion below reports it
            errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=writer)
    thread.start()
    while thread.is_alive():  # a page polling the row meanwhile
        list(Document.objects.filter(pk=doc.pk).values_list("message", flat=True))
        for _ in Document.objects.all().iterator(chunk_size=1):
            pass
    thread.join()
    assert not errors, errors
    assert Document.objects.get(pk=doc.pk).message == "99"
