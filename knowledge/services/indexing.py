"""Indexing: parse, chunk, embed and store a document's chunks in the database and Chroma
together (or not at all), with truthful progress and cancel; re-indexing after a model or
chunking change embeds only what changed."""

from __future__ import annotations

import logging
import time
from pathlib import Path, PurePath
from typing import Any, Callable

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from knowledge import store
from knowledge.embeddings import model_id
from knowledge.errors import KnowledgeInputError
from knowledge.ingestion import IngestProgress, PreparedDocument, prepare
from knowledge.models import Chunk, Document
from knowledge.scope import NO_TEAM
from knowledge.services.access import require_role

log = logging.getLogger(__name__)


def stored_file(document: Document) -> Path:
    return settings.KERNELHUB_DATA_DIR / document.stored_path


LOCKED_RETRIES = 6  # SQLite answers "table is locked" at once while a reader holds it


def set_progress(document_id: int, progress: int, message: str, **fields: Any) -> None:
    """The progress row (the pages poll it while indexing runs in a background thread)."""
    from django.db import OperationalError

    for attempt in range(LOCKED_RETRIES):
        try:
            Document.objects.filter(pk=document_id).update(
                progress=progress, message=message, updated_at=timezone.now(), **fields)
            return
        except OperationalError as exc:  # a shared-cache SQLite lock is not waited for
            if "locked" not in str(exc) or attempt == LOCKED_RETRIES - 1:
                raise
            time.sleep(0.05 * 2 ** attempt)


class IngestCancelled(Exception):
    """document_cancel asked indexing to stop."""


# Progress rows are written at most this often (and at every stage change); each write
# also notices a cancel request.
PROGRESS_INTERVAL_S = 0.5


def _progress_writer(document_id: int) -> Callable[[IngestProgress], None]:
    last = {"at": 0.0, "stage": ""}

    def report(progress: IngestProgress) -> None:
        now = time.monotonic()
        if progress.stage == last["stage"] and now - last["at"] < PROGRESS_INTERVAL_S:
            return
        last.update(at=now, stage=progress.stage)
        written = Document.objects.filter(pk=document_id, cancel_requested=False).update(
            progress=progress.percent(), message=progress.message(),
            progress_detail=progress.to_dict(), updated_at=timezone.now(),
        )
        if not written:
            raise IngestCancelled()

    return report


def document_process(document_id: int) -> Document:
    """Parse, chunk, embed and index a pending document; on bad content mark it failed.

    Either all of its chunks are in the database and Chroma, or none are. Pages that
    cannot be read are listed on the document; the others are indexed. A cancel request
    (document_cancel) stops it at the next progress report and keeps nothing new.
    """
    document = Document.objects.get(pk=document_id)
    if document.cancel_requested:
        return _mark_cancelled(document)
    set_progress(document.pk, 1, "Starting", status=Document.Status.PROCESSING,
                  progress_detail={"stage": "starting"})
    try:
        data = stored_file(document).read_bytes()
        prepared = prepare(
            document.filename, data, document.kind, max_pdf_pages=settings.KB_MAX_PDF_PAGES,
            report=_progress_writer(document.pk), known_vectors=known_vectors(document),
        )
        set_progress(document.pk, 92, "Storing vectors")
        replace_chunks(document, prepared)
    except IngestCancelled:
        return _mark_cancelled(document)
    except Exception as exc:
        message = str(exc) if isinstance(exc, KnowledgeInputError) else (
            f"{document.filename}: indexing failed ({type(exc).__name__}: {exc})"
        )
        if not isinstance(exc, KnowledgeInputError):
            log.exception("indexing document %s failed", document.pk)
        set_progress(document.pk, 100, message, status=Document.Status.FAILED, chunk_count=0)
        stored_file(document).unlink(missing_ok=True)
        document.refresh_from_db()
        return document
    set_progress(document.pk, 100, indexed_message(prepared), status=Document.Status.READY,
                  indexed_at=timezone.now(), progress_detail=final_detail(prepared))
    document.refresh_from_db()
    return document


def indexed_message(prepared: PreparedDocument) -> str:
    text = f"Indexed {len(prepared.chunks)} chunks"
    if prepared.reused:
        text += f" ({prepared.reused} unchanged, not embedded again)"
    if prepared.failed_pages:
        pages = ", ".join(str(page) for page, _ in prepared.failed_pages[:20])
        more = "…" if len(prepared.failed_pages) > 20 else ""
        text += (f"; {len(prepared.failed_pages)} page(s) could not be read and are not "
                 f"searchable: {pages}{more} ({prepared.failed_pages[0][1]})")
    return text


def final_detail(prepared: PreparedDocument) -> dict:
    return {"stage": "done", "pages_total": prepared.pages, "chunks_total": len(prepared.chunks),
            "chunks_done": len(prepared.chunks), "chunks_reused": prepared.reused,
            "failed_pages": [list(p) for p in prepared.failed_pages]}


def _mark_cancelled(document: Document) -> Document:
    """Stop where it was: a first indexing keeps nothing (the file goes too, so the same
    file may be uploaded again); a re-index keeps the chunks it had."""
    had_chunks = document.chunks.exists()
    status = Document.Status.READY if had_chunks else Document.Status.FAILED
    set_progress(document.pk, 100, "Indexing cancelled" + ("; the previous index is kept" if had_chunks else ""),
                  status=status, cancel_requested=False,
                  progress_detail={"stage": "cancelled"})
    if not had_chunks:
        stored_file(document).unlink(missing_ok=True)
    document.refresh_from_db()
    return document


def known_vectors(document: Document) -> dict[str, Any]:
    """chunk hash -> stored vector, for the document's chunks made by the current model."""
    if document.embedding_model != model_id():
        return {}
    rows = dict(document.chunks.exclude(content_hash="").values_list("pk", "content_hash"))
    if not rows:
        return {}
    got = store.collection(store.CHUNKS).get(ids=[str(pk) for pk in rows], include=["embeddings"])
    return {rows[int(id_)]: vector for id_, vector in zip(got["ids"], got["embeddings"])}


def _chunk_metadata(document: Document, chunk: Chunk) -> dict[str, Any]:
    return {
        "document_id": document.pk, "document": document.title, "vendor": document.vendor,
        "hardware": document.hardware, "category": document.category,
        "page": chunk.page, "section": chunk.section[:500], "ordinal": chunk.ordinal,
        # Who may read it: scoped queries filter on these (knowledge.selectors.KnowledgeScope).
        "team_id": document.team_id or NO_TEAM, "shared": bool(document.shared),
    }


def sync_chunk_metadata(document: Document) -> None:
    """Rewrite the metadata of a document's vectors after its team or sharing changed."""
    chunks = list(document.chunks.order_by("ordinal"))
    store.update_metadata(store.CHUNKS, [str(c.pk) for c in chunks],
                          [_chunk_metadata(document, c) for c in chunks])


def replace_chunks(document: Document, prepared: PreparedDocument) -> None:
    """Swap a document's chunks for new ones in both stores; on error keep the old ones."""
    old_ids = [str(pk) for pk in document.chunks.values_list("pk", flat=True)]
    new_ids: list[str] = []
    try:
        with transaction.atomic():
            document.chunks.all().delete()
            chunks = Chunk.objects.bulk_create([
                Chunk(document=document, ordinal=c.ordinal, text=c.text, section=c.section[:1000],
                      page=c.page, token_count=c.tokens, content_hash=digest)
                for c, digest in zip(prepared.chunks, prepared.hashes)
            ])
            document.title = prepared.title if document.title == PurePath(document.filename).stem else document.title
            new_ids = [str(c.pk) for c in chunks]
            # upsert: a row id Chroma still holds from a rolled-back write or a reset
            # database must take this chunk's text and metadata, not keep the stale ones
            store.upsert(store.CHUNKS, new_ids, prepared.vectors,
                         [_chunk_metadata(document, c) for c in chunks], [c.text for c in chunks])
            Document.objects.filter(pk=document.pk).update(
                title=document.title, pages=prepared.pages, chunk_count=len(chunks),
                embedding_model=model_id(),
            )
    except BaseException:
        store.delete(store.CHUNKS, ids=new_ids)  # vectors of the rolled-back rows
        raise
    reused = set(new_ids)
    store.delete(store.CHUNKS, ids=[i for i in old_ids if i not in reused])


def documents_reindex(*, document_ids: list[int] | None = None,
                      output: Callable[[str], None] = lambda line: None,
                      user=None) -> tuple[int, int]:
    """Re-chunk and re-embed indexed documents (after a model or chunking change); the
    vectors get the current metadata (team, sharing) too.

    Only what changed is embedded again: a chunk whose text, heading context and model
    are unchanged (same content hash, document.embedding_model == model_id()) keeps its
    vector. With no `document_ids` (all documents) every vector without a chunk row is
    dropped afterwards, so vectors of another model or of chunks that no longer exist do
    not linger; only the system or a superuser does that. A user re-indexes documents of teams where they may
    upload; naming any other document refuses the whole run before anything changes.
    Returns (documents, chunks).
    """
    selected = Document.objects.filter(status=Document.Status.READY).order_by("pk")
    if document_ids is None:
        if user is not None and not getattr(user, "is_superuser", False):
            raise PermissionDenied("Re-indexing the whole knowledge base needs a superuser.")
    else:
        selected = selected.filter(pk__in=document_ids)
        for document in selected.select_related("team"):
            require_role(user, document.team, "upload", "Re-indexing documents")
    documents = chunks = 0
    for document in selected:
        try:
            data = stored_file(document).read_bytes()
            prepared = prepare(document.filename, data, document.kind,
                               max_pdf_pages=settings.KB_MAX_PDF_PAGES,
                               known_vectors=known_vectors(document))
            replace_chunks(document, prepared)
        except (OSError, KnowledgeInputError) as exc:
            output(f"FAILED {document.filename}: {exc}")
            set_progress(document.pk, 100, f"Re-indexing failed: {exc}",
                          status=Document.Status.FAILED, chunk_count=0)
            document.chunks.all().delete()
            continue
        documents += 1
        chunks += len(prepared.chunks)
        Document.objects.filter(pk=document.pk).update(indexed_at=timezone.now())
        output(f"reindexed {document.filename}: {len(prepared.chunks)} chunks, "
               f"{len(prepared.chunks) - prepared.reused} embedded")
    if document_ids is None:
        _drop_stray_vectors()
    return documents, chunks


def _drop_stray_vectors() -> None:
    """Vectors with no chunk row (another model's leftovers, crashed writes) go."""
    target = store.collection(store.CHUNKS)
    ids = target.get(include=[])["ids"]
    known = {str(pk) for pk in Chunk.objects.values_list("pk", flat=True)}
    store.delete(store.CHUNKS, ids=[i for i in ids if i not in known])
