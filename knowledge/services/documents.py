"""A document's life: checked upload, background or immediate indexing, new versions,
cancel and delete (recorded in the audit trail)."""

from __future__ import annotations

import hashlib
from pathlib import Path, PurePath
from typing import Iterable

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from knowledge import store
from knowledge.errors import KnowledgeInputError
from knowledge.filetypes import detect_kind, kind_for_name
from knowledge.ingestion import prepare
from knowledge.models import GENERIC_HARDWARE, Category, Document
from knowledge.selectors import document_find_duplicate
from knowledge.services.access import audit, require_role
from knowledge.services.indexing import (
    document_process, final_detail, indexed_message, known_vectors, replace_chunks, stored_file,
)


def normalize_hardware(hardware: str | Iterable[str] | None) -> list[str]:
    """"H100, sm90" or ["H100", "sm90"] -> ["h100", "sm90"]; no tags means vendor-neutral."""
    if isinstance(hardware, str):
        hardware = hardware.replace(",", " ").split()
    tags: list[str] = []
    for tag in hardware or []:
        tag = tag.strip().lower()
        if tag and tag not in tags:
            tags.append(tag)
    return tags or [GENERIC_HARDWARE]


def document_check_size(filename: str, size: int) -> None:
    limit = settings.KB_MAX_UPLOAD_BYTES
    if size > limit:
        raise KnowledgeInputError(
            f"{PurePath(filename).name}: {size / 1e6:.1f} MB is over the upload limit of "
            f"{limit / 1e6:.1f} MB (KB_MAX_UPLOAD_BYTES)."
        )


def _check_category(category: str) -> str:
    if category not in Category.values:
        raise KnowledgeInputError(
            f"Unknown category {category!r}; use one of {', '.join(Category.values)}."
        )
    return category


def document_submit(**upload) -> Document:
    """What the upload page does: store the upload (`document_upload`, same arguments) and
    index it in the background, wherever `kernelhub.placement` runs ingestion."""
    from kernelhub import placement  # the project's dispatcher; imported late: it loads Celery

    document = document_upload(**upload)
    placement.document_ingest(document.pk)
    return document


def document_upload(*, filename: str, data: bytes, category: str, vendor: str = "",
                    hardware: str | Iterable[str] | None = None, title: str = "",
                    user=None, team=None, shared: bool = False) -> Document:
    """Check an upload and store it as a pending document of `team` (indexing happens later).

    The role (engineer or admin of `team`; admin to share it) is checked first; size, type
    (extension and magic bytes), emptiness and duplicates are refused next, before
    anything is stored; problems only parsing can find are reported by document_process
    on the document itself.
    """
    if user is not None and team is None:
        raise KnowledgeInputError("Choose the team this document is for.")
    require_role(user, team, "upload", "Uploading documents")
    if shared:
        require_role(user, team, "manage", "Sharing a document with every team")
    name = PurePath(filename).name
    document_check_size(name, len(data))
    _check_category(category)
    kind = detect_kind(name, data[:4096])
    if kind != "pdf" and not data.strip():
        raise KnowledgeInputError(f"{name}: the file is empty.")
    content_hash = hashlib.sha256(data).hexdigest()
    refuse_duplicate(name, content_hash, team)
    suffix = PurePath(name).suffix.lower()
    try:
        with transaction.atomic():
            document = Document.objects.create(
                title=(title or PurePath(name).stem)[:300], filename=name, kind=kind,
                vendor=vendor.strip().lower(), hardware=normalize_hardware(hardware),
                category=category, content_hash=content_hash, size_bytes=len(data),
                uploaded_by=user if user is not None and user.is_authenticated else None,
                team=team, shared=bool(shared), message="Waiting to be indexed",
            )
            document.stored_path = f"knowledge/files/{document.pk}-{content_hash[:16]}{suffix}"
            path = stored_file(document)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            document.save(update_fields=["stored_path"])
    except IntegrityError:  # the same bytes were stored a moment ago by someone else
        refuse_duplicate(name, content_hash, team)
        raise
    return document


def refuse_duplicate(name: str, content_hash: str, team) -> None:
    original = document_find_duplicate(content_hash, team=team)
    if original is not None:
        raise KnowledgeInputError(
            f'{name}: duplicate of "{original.title}" (document #{original.pk}, '
            f"{original.filename}, uploaded {original.created_at:%Y-%m-%d %H:%M} UTC); "
            "nothing was stored."
        )


def document_cancel(document: Document, *, user=None) -> Document:
    """Ask a waiting or running indexing to stop (it does at its next progress report)."""
    require_role(user, document.team, "upload", "Cancelling indexing")
    if document.is_finished:
        raise KnowledgeInputError("This document is not being indexed; there is nothing to cancel.")
    Document.objects.filter(pk=document.pk).update(cancel_requested=True,
                                                   message="Cancelling…", updated_at=timezone.now())
    document.refresh_from_db()
    return document


def document_ingest_file(path: Path, *, category: str, vendor: str = "",
                         hardware: str | Iterable[str] | None = None, user=None,
                         team=None, shared: bool = False) -> Document:
    """Upload and index a file now (the kb_ingest command); on failure nothing is kept."""
    path = Path(path)
    kind_for_name(path.name)
    document_check_size(path.name, path.stat().st_size)
    document = document_upload(filename=path.name, data=path.read_bytes(), category=category,
                               vendor=vendor, hardware=hardware, user=user, team=team,
                               shared=shared)
    document = document_process(document.pk)
    if document.status == Document.Status.FAILED:
        document.delete()
        raise KnowledgeInputError(document.message)
    return document


def document_delete(document: Document, *, user=None) -> None:
    """Delete a document, its chunks and their vectors; the audit trail records it."""
    require_role(user, document.team, "upload", "Deleting documents")
    if user is not None and document.status in (Document.Status.PENDING, Document.Status.PROCESSING):
        raise KnowledgeInputError("Wait until indexing finishes before deleting this document.")
    document_id = document.pk
    path = stored_file(document) if document.stored_path else None
    with transaction.atomic():
        audit(team=document.team, user=user, action="document_deleted", target=document,
               details={"title": document.title, "filename": document.filename,
                        "content_hash": document.content_hash, "shared": document.shared,
                        "chunk_count": document.chunk_count})
        document.delete()
        store.delete(store.CHUNKS, where={"document_id": document_id})
    if path is not None:
        path.unlink(missing_ok=True)


def document_replace_file(document: Document, *, data: bytes, user=None) -> Document:
    """A new version of a document's file: re-index it now, embedding only the chunks whose
    text changed (the others keep their vectors). Bad content raises KnowledgeInputError
    and leaves the document, its file and its chunks as they were."""
    require_role(user, document.team, "upload", "Replacing documents")
    if document.status != Document.Status.READY:
        raise KnowledgeInputError("Only an indexed document can get a new version.")
    document_check_size(document.filename, len(data))
    kind = detect_kind(document.filename, data[:4096])
    if kind != "pdf" and not data.strip():
        raise KnowledgeInputError(f"{document.filename}: the file is empty.")
    content_hash = hashlib.sha256(data).hexdigest()
    if content_hash == document.content_hash:
        return document
    refuse_duplicate(document.filename, content_hash, document.team)
    prepared = prepare(document.filename, data, kind, max_pdf_pages=settings.KB_MAX_PDF_PAGES,
                       known_vectors=known_vectors(document))
    old_path = stored_file(document)
    stored_path = f"knowledge/files/{document.pk}-{content_hash[:16]}{PurePath(document.filename).suffix.lower()}"
    new_path = settings.KERNELHUB_DATA_DIR / stored_path
    new_path.write_bytes(data)
    try:
        with transaction.atomic():
            Document.objects.filter(pk=document.pk).update(
                content_hash=content_hash, size_bytes=len(data), kind=kind,
                stored_path=stored_path, indexed_at=timezone.now(),
                message=indexed_message(prepared), progress_detail=final_detail(prepared))
            document.refresh_from_db()
            replace_chunks(document, prepared)
    except BaseException:
        if new_path != old_path:
            new_path.unlink(missing_ok=True)
        raise
    if old_path != stored_file(document):
        old_path.unlink(missing_ok=True)
    document.refresh_from_db()
    return document
