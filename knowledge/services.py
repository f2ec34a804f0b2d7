"""Writes to the knowledge base. The database and Chroma change together or not at all.

Every write checks the actor's role in the owning team here (kernelhub.teams.selectors
.user_can): engineers and admins ("upload") add, edit, re-index and delete their team's
documents and skills; only admins ("manage", or a superuser) share them with every team.
`user=None` is the system itself (management commands, the session runner). Deletions,
retirements, sharing and team changes land in the audit trail (kernelhub.review).
"""

from __future__ import annotations

import hashlib
import logging
import time
from pathlib import Path, PurePath
from typing import Any, Callable, Iterable

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from knowledge import store
from knowledge.embeddings import embed, model_id
from knowledge.errors import KnowledgeInputError
from knowledge.filetypes import detect_kind, kind_for_name
from knowledge.ingestion import IngestProgress, PreparedDocument, prepare
from knowledge.models import GENERIC_HARDWARE, Category, Chunk, Document, Skill, SkillUse
from kernelhub.teams.selectors import user_can
from knowledge.selectors import NO_TEAM, KnowledgeScope, document_find_duplicate
from knowledge.skills import MERGE_SIMILARITY, SkillDraft, skill_drafts, skill_metadata, skill_text, skill_title

log = logging.getLogger(__name__)


# --- who may write ---------------------------------------------------------------------------

def user_may(user, team, action: str) -> bool:
    """Whether `user` may do `action` to a row owned by `team` (None: no team owns it)."""
    if user is None:  # the system: management commands, the session runner
        return True
    if not getattr(user, "is_authenticated", False):
        return False
    if getattr(user, "is_superuser", False):
        return True
    return team is not None and user_can(user, team, action)


def _require(user, team, action: str, what: str) -> None:
    if user_may(user, team, action):
        return
    where = f"team {team.name!r}" if team is not None else "rows no team owns (superusers only)"
    need = {"manage": "an admin", "review": "a reviewer, engineer or admin"}.get(
        action, "an engineer or admin")
    raise PermissionDenied(f"{what} in {where} needs {need} role.")


def _audit(*, team, user, action: str, target, details: dict) -> None:
    from kernelhub.review.services import audit_record

    audit_record(team=team, actor=user, action=action, target=target, details=details)


# --- documents -------------------------------------------------------------------------------

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


def _stored_file(document: Document) -> Path:
    return settings.KERNELHUB_DATA_DIR / document.stored_path


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
    _require(user, team, "upload", "Uploading documents")
    if shared:
        _require(user, team, "manage", "Sharing a document with every team")
    name = PurePath(filename).name
    document_check_size(name, len(data))
    _check_category(category)
    kind = detect_kind(name, data[:4096])
    if kind != "pdf" and not data.strip():
        raise KnowledgeInputError(f"{name}: the file is empty.")
    content_hash = hashlib.sha256(data).hexdigest()
    _refuse_duplicate(name, content_hash, team)
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
            path = _stored_file(document)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            document.save(update_fields=["stored_path"])
    except IntegrityError:  # the same bytes were stored a moment ago by someone else
        _refuse_duplicate(name, content_hash, team)
        raise
    return document


def _refuse_duplicate(name: str, content_hash: str, team) -> None:
    original = document_find_duplicate(content_hash, team=team)
    if original is not None:
        raise KnowledgeInputError(
            f'{name}: duplicate of "{original.title}" (document #{original.pk}, '
            f"{original.filename}, uploaded {original.created_at:%Y-%m-%d %H:%M} UTC); "
            "nothing was stored."
        )


def _set_progress(document_id: int, progress: int, message: str, **fields: Any) -> None:
    Document.objects.filter(pk=document_id).update(
        progress=progress, message=message, updated_at=timezone.now(), **fields
    )


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
    _set_progress(document.pk, 1, "Starting", status=Document.Status.PROCESSING,
                  progress_detail={"stage": "starting"})
    try:
        data = _stored_file(document).read_bytes()
        prepared = prepare(
            document.filename, data, document.kind, max_pdf_pages=settings.KB_MAX_PDF_PAGES,
            report=_progress_writer(document.pk), known_vectors=_known_vectors(document),
        )
        _set_progress(document.pk, 92, "Storing vectors")
        _replace_chunks(document, prepared)
    except IngestCancelled:
        return _mark_cancelled(document)
    except Exception as exc:
        message = str(exc) if isinstance(exc, KnowledgeInputError) else (
            f"{document.filename}: indexing failed ({type(exc).__name__}: {exc})"
        )
        if not isinstance(exc, KnowledgeInputError):
            log.exception("indexing document %s failed", document.pk)
        _set_progress(document.pk, 100, message, status=Document.Status.FAILED, chunk_count=0)
        _stored_file(document).unlink(missing_ok=True)
        document.refresh_from_db()
        return document
    _set_progress(document.pk, 100, _indexed_message(prepared), status=Document.Status.READY,
                  indexed_at=timezone.now(), progress_detail=_final_detail(prepared))
    document.refresh_from_db()
    return document


def _indexed_message(prepared: PreparedDocument) -> str:
    text = f"Indexed {len(prepared.chunks)} chunks"
    if prepared.reused:
        text += f" ({prepared.reused} unchanged, not embedded again)"
    if prepared.failed_pages:
        pages = ", ".join(str(page) for page, _ in prepared.failed_pages[:20])
        more = "…" if len(prepared.failed_pages) > 20 else ""
        text += (f"; {len(prepared.failed_pages)} page(s) could not be read and are not "
                 f"searchable: {pages}{more} ({prepared.failed_pages[0][1]})")
    return text


def _final_detail(prepared: PreparedDocument) -> dict:
    return {"stage": "done", "pages_total": prepared.pages, "chunks_total": len(prepared.chunks),
            "chunks_done": len(prepared.chunks), "chunks_reused": prepared.reused,
            "failed_pages": [list(p) for p in prepared.failed_pages]}


def _mark_cancelled(document: Document) -> Document:
    """Stop where it was: a first indexing keeps nothing (the file goes too, so the same
    file may be uploaded again); a re-index keeps the chunks it had."""
    had_chunks = document.chunks.exists()
    status = Document.Status.READY if had_chunks else Document.Status.FAILED
    _set_progress(document.pk, 100, "Indexing cancelled" + ("; the previous index is kept" if had_chunks else ""),
                  status=status, cancel_requested=False,
                  progress_detail={"stage": "cancelled"})
    if not had_chunks:
        _stored_file(document).unlink(missing_ok=True)
    document.refresh_from_db()
    return document


def document_cancel(document: Document, *, user=None) -> Document:
    """Ask a waiting or running indexing to stop (it does at its next progress report)."""
    _require(user, document.team, "upload", "Cancelling indexing")
    if document.is_finished:
        raise KnowledgeInputError("This document is not being indexed; there is nothing to cancel.")
    Document.objects.filter(pk=document.pk).update(cancel_requested=True,
                                                   message="Cancelling…", updated_at=timezone.now())
    document.refresh_from_db()
    return document


def _known_vectors(document: Document) -> dict[str, Any]:
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


def _sync_chunk_metadata(document: Document) -> None:
    """Rewrite the metadata of a document's vectors after its team or sharing changed."""
    chunks = list(document.chunks.order_by("ordinal"))
    store.update_metadata(store.CHUNKS, [str(c.pk) for c in chunks],
                          [_chunk_metadata(document, c) for c in chunks])


def _replace_chunks(document: Document, prepared: PreparedDocument) -> None:
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
            store.add(store.CHUNKS, new_ids, prepared.vectors,
                      [_chunk_metadata(document, c) for c in chunks], [c.text for c in chunks])
            Document.objects.filter(pk=document.pk).update(
                title=document.title, pages=prepared.pages, chunk_count=len(chunks),
                embedding_model=model_id(),
            )
    except BaseException:
        store.delete(store.CHUNKS, ids=new_ids)  # vectors of the rolled-back rows
        raise
    store.delete(store.CHUNKS, ids=old_ids)


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
    _require(user, document.team, "upload", "Deleting documents")
    if user is not None and document.status in (Document.Status.PENDING, Document.Status.PROCESSING):
        raise KnowledgeInputError("Wait until indexing finishes before deleting this document.")
    document_id = document.pk
    path = _stored_file(document) if document.stored_path else None
    with transaction.atomic():
        _audit(team=document.team, user=user, action="document_deleted", target=document,
               details={"title": document.title, "filename": document.filename,
                        "content_hash": document.content_hash, "shared": document.shared,
                        "chunk_count": document.chunk_count})
        document.delete()
        store.delete(store.CHUNKS, where={"document_id": document_id})
    if path is not None:
        path.unlink(missing_ok=True)


def document_set_shared(*, document: Document, shared: bool, user) -> Document:
    """Share a document with every team (or stop sharing it): admins only."""
    _require(user, document.team, "manage", "Sharing a document with every team")
    if document.shared == bool(shared):
        return document
    with transaction.atomic():
        document.shared = bool(shared)
        document.save(update_fields=["shared", "updated_at"])
        _audit(team=document.team, user=user,
               action="document_shared" if shared else "document_unshared", target=document,
               details={"title": document.title})
        _sync_chunk_metadata(document)
    return document


def document_assign_team(*, document: Document, team, user) -> Document:
    """Give a document to a team (e.g. a legacy one no team owns): admins of both sides."""
    _require(user, document.team, "manage", "Moving documents")
    if team is not None:
        _require(user, team, "manage", "Moving documents")
    if document.team_id == getattr(team, "pk", None):
        return document
    old_team = document.team
    with transaction.atomic():
        document.team = team
        document.save(update_fields=["team", "updated_at"])
        details = {"title": document.title, "from_team": getattr(old_team, "pk", None),
                   "to_team": getattr(team, "pk", None)}
        for side in {t for t in (old_team, team)}:  # both teams' trails (None: no team's)
            _audit(team=side, user=user, action="document_team_changed", target=document,
                   details=details)
        _sync_chunk_metadata(document)
    return document


def document_replace_file(document: Document, *, data: bytes, user=None) -> Document:
    """A new version of a document's file: re-index it now, embedding only the chunks whose
    text changed (the others keep their vectors). Bad content raises KnowledgeInputError
    and leaves the document, its file and its chunks as they were."""
    _require(user, document.team, "upload", "Replacing documents")
    if document.status != Document.Status.READY:
        raise KnowledgeInputError("Only an indexed document can get a new version.")
    document_check_size(document.filename, len(data))
    kind = detect_kind(document.filename, data[:4096])
    if kind != "pdf" and not data.strip():
        raise KnowledgeInputError(f"{document.filename}: the file is empty.")
    content_hash = hashlib.sha256(data).hexdigest()
    if content_hash == document.content_hash:
        return document
    _refuse_duplicate(document.filename, content_hash, document.team)
    prepared = prepare(document.filename, data, kind, max_pdf_pages=settings.KB_MAX_PDF_PAGES,
                       known_vectors=_known_vectors(document))
    old_path = _stored_file(document)
    stored_path = f"knowledge/files/{document.pk}-{content_hash[:16]}{PurePath(document.filename).suffix.lower()}"
    new_path = settings.KERNELHUB_DATA_DIR / stored_path
    new_path.write_bytes(data)
    try:
        with transaction.atomic():
            Document.objects.filter(pk=document.pk).update(
                content_hash=content_hash, size_bytes=len(data), kind=kind,
                stored_path=stored_path, indexed_at=timezone.now(),
                message=_indexed_message(prepared), progress_detail=_final_detail(prepared))
            document.refresh_from_db()
            _replace_chunks(document, prepared)
    except BaseException:
        if new_path != old_path:
            new_path.unlink(missing_ok=True)
        raise
    if old_path != _stored_file(document):
        old_path.unlink(missing_ok=True)
    document.refresh_from_db()
    return document


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
            _require(user, document.team, "upload", "Re-indexing documents")
    documents = chunks = 0
    for document in selected:
        try:
            data = _stored_file(document).read_bytes()
            prepared = prepare(document.filename, data, document.kind,
                               max_pdf_pages=settings.KB_MAX_PDF_PAGES,
                               known_vectors=_known_vectors(document))
            _replace_chunks(document, prepared)
        except (OSError, KnowledgeInputError) as exc:
            output(f"FAILED {document.filename}: {exc}")
            _set_progress(document.pk, 100, f"Re-indexing failed: {exc}",
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


# --- skills ----------------------------------------------------------------------------------

def _skill_index(skill: Skill) -> None:
    store.upsert(store.SKILLS, [f"skill-{skill.pk}"], embed([skill_text(skill)]),
                 [skill_metadata(skill)], [skill_text(skill)])


def _similar_skill(draft: SkillDraft, text: str, team) -> Skill | None:
    """The team's own active skill that is the same lesson (never another team's)."""
    own = Skill.objects.filter(team=team) if team is not None else Skill.objects.filter(team__isnull=True)
    exact = own.filter(transformation=draft.transformation, family=draft.family,
                       hardware=draft.hardware, retired=False).first()
    if exact or not own.filter(retired=False, hardware=draft.hardware).exists():
        return exact
    clauses: list[dict] = [{"retired": False}, {"team_id": team.pk if team is not None else NO_TEAM}]
    if draft.hardware:
        clauses.append({"hardware": draft.hardware})
    hits = store.query(store.SKILLS, embed([text])[0], 1, where={"$and": clauses})
    if hits and hits[0][1] >= MERGE_SIMILARITY:
        return own.filter(pk=int(hits[0][0].removeprefix("skill-")), retired=False).first()
    return None


def _session_team(session_id: Any):
    """The team of session `session_id` (skills belong to their session's team)."""
    if session_id is None or not str(session_id).isdigit():
        return None
    from kernelhub.optimization.models import SearchSession

    session = SearchSession.objects.select_related("team").filter(pk=int(session_id)).first()
    return session.team if session is not None else None


def distill_session_skills(nodes: list[dict[str, Any]], session_id: Any = None, *,
                           team=None) -> list[Skill]:
    """Turn a finished session's successful steps into skills of the session's team,
    merging similar ones of that team.

    `nodes` are plain dicts (id, parent_id, status, reward, advantage, speedup_vs_eager,
    origin {transformation, params}, diagnostics {bottleneck}, integrity_flags, family,
    hardware, session). `team` defaults to the team of session `session_id`; skills
    without either belong to no team (staff only). Returns the skills created or updated.
    """
    if team is None:
        team = _session_team(session_id)
    touched: dict[int, Skill] = {}
    for draft in skill_drafts(nodes, session_id):
        candidate = Skill(
            title=skill_title(draft.transformation, draft.family, draft.hardware)[:300],
            description=draft.description, transformation=draft.transformation[:200],
            params=draft.params, family=draft.family[:64], hardware=draft.hardware[:64],
            bottleneck_before=draft.bottleneck_before[:64], bottleneck_after=draft.bottleneck_after[:64],
            speedup_mean=draft.speedup, speedup_best=draft.speedup, advantage_mean=draft.advantage,
            observations=1, sessions=[draft.session] if draft.session else [],
            source_nodes=[f"{draft.session}:{draft.node}"], team=team,
            shape_class=draft.shape_class[:100],
        )
        with transaction.atomic():
            skill = _similar_skill(draft, skill_text(candidate), team)
            if skill is None:
                skill = candidate
                skill.save()
            else:
                _merge(skill, draft)
            _skill_index(skill)
        touched[skill.pk] = skill
    return list(touched.values())


def _merge(skill: Skill, draft: SkillDraft) -> None:
    n = skill.observations
    skill.speedup_mean = (skill.speedup_mean * n + draft.speedup) / (n + 1)
    skill.advantage_mean = (skill.advantage_mean * n + draft.advantage) / (n + 1)
    if draft.speedup > skill.speedup_best:  # the search reuses the best step's parameters
        skill.params = draft.params
        skill.shape_class = draft.shape_class[:100] or skill.shape_class
    skill.speedup_best = max(skill.speedup_best, draft.speedup)
    skill.observations = n + 1
    if draft.session and draft.session not in skill.sessions:
        skill.sessions = [*skill.sessions, draft.session]
    skill.source_nodes = [*skill.source_nodes, f"{draft.session}:{draft.node}"][-200:]
    skill.bottleneck_before = skill.bottleneck_before or draft.bottleneck_before
    skill.bottleneck_after = skill.bottleneck_after or draft.bottleneck_after
    skill.description = skill.description or draft.description
    skill.save()


# A skill whose last this many uses (since a reviewer last restored it) all failed to beat
# their parent is retired automatically.
RETIRE_AFTER_FAILURES = 5


def skill_record_outcome(skill_id: int, helped: bool, *, gain: float | None = None,
                         session=None, node_id: str = "") -> Skill:
    """Count one use of a skill: the node it shaped beat its parent (`helped`) or not, by
    `gain` (node speedup / parent speedup). With a `session` and `node_id` the use is
    recorded once per node (a session finishing again counts nothing twice). A skill that
    keeps failing is retired automatically (`RETIRE_AFTER_FAILURES`)."""
    with transaction.atomic():
        skill = Skill.objects.select_for_update().filter(pk=skill_id).first()
        if skill is None:
            raise Skill.DoesNotExist(f"skill {skill_id} does not exist")
        if session is not None and SkillUse.objects.filter(
                skill=skill, session=session, node_id=str(node_id)).exists():
            return skill
        SkillUse.objects.create(skill=skill, session=session, node_id=str(node_id),
                                helped=bool(helped), gain=gain)
        field = "helped_count" if helped else "not_helped_count"
        changes: dict[str, Any] = {field: F(field) + 1, "last_used_at": timezone.now()}
        if gain is not None:
            count = skill.gain_uses
            changes.update(gain_uses=count + 1,
                           gain_mean=((skill.gain_mean or 0.0) * count + gain) / (count + 1))
        Skill.objects.filter(pk=skill.pk).update(**changes)
        skill.refresh_from_db()
        if not skill.retired and _keeps_failing(skill):
            _retire_automatically(skill)
    return skill


def _keeps_failing(skill: Skill) -> bool:
    recent = SkillUse.objects.filter(skill=skill)
    if skill.restored_at is not None:
        recent = recent.filter(created_at__gt=skill.restored_at)
    last = list(recent.order_by("-created_at", "-pk").values_list("helped", flat=True)
                [:RETIRE_AFTER_FAILURES])
    return len(last) == RETIRE_AFTER_FAILURES and not any(last)


def _retire_automatically(skill: Skill) -> None:
    skill.retired, skill.retired_automatically = True, True
    skill.retired_reason = (f"retired automatically: its last {RETIRE_AFTER_FAILURES} uses "
                            "did not beat their parent")
    skill.save(update_fields=["retired", "retired_automatically", "retired_reason", "updated_at"])
    _audit(team=skill.team, user=None, action="skill_auto_retired", target=skill,
           details={"title": skill.title, "reason": skill.retired_reason,
                    "helped": skill.helped_count, "not_helped": skill.not_helped_count})
    _skill_index(skill)


def session_record_skill_use(session, nodes: list[dict[str, Any]]) -> list[SkillUse]:
    """Score the skills that shaped a finished (or cancelled) session's nodes: one use per
    node, helped when it beat its parent (search_engine.search.skill_priors.skill_uses).
    Skills since deleted, or another team's, are skipped. Returns the new uses."""
    from search_engine.search.skill_priors import skill_uses

    uses = [u for u in skill_uses(nodes) if u.skill_id.isdigit()]
    visible = set(Skill.objects.filter(
        pk__in={int(u.skill_id) for u in uses}).filter(
        KnowledgeScope.for_teams([session.team_id]).q()).values_list("pk", flat=True))
    recorded = []
    for use in uses:
        if int(use.skill_id) not in visible:
            continue
        before = SkillUse.objects.filter(skill_id=int(use.skill_id), session=session,
                                         node_id=use.node_id).exists()
        skill_record_outcome(int(use.skill_id), use.helped, gain=use.gain, session=session,
                             node_id=use.node_id)
        if not before:
            recorded.append(use)
    return recorded


SKILL_EDITABLE = ("title", "description", "transformation", "params", "family", "hardware",
                  "bottleneck_before", "bottleneck_after")


def skill_update(skill: Skill, *, user=None, **fields: Any) -> Skill:
    _require(user, skill.team, "upload", "Editing skills")
    unknown = set(fields) - set(SKILL_EDITABLE)
    if unknown:
        raise KnowledgeInputError(f"Cannot edit {', '.join(sorted(unknown))} of a skill.")
    for name, value in fields.items():
        setattr(skill, name, value.strip().lower() if name in ("family", "hardware") else value)
    with transaction.atomic():
        skill.save()
        _skill_index(skill)
    return skill


def skill_retire(skill: Skill, *, retired: bool = True, user=None) -> Skill:
    """Retired skills stay on record but are no longer retrieved or merged into."""
    if not retired:
        return skill_restore(skill, user=user)
    _require(user, skill.team, "upload", "Retiring skills")
    with transaction.atomic():
        skill.retired = retired
        skill.retired_automatically = False
        skill.retired_reason = "retired by hand"
        skill.save(update_fields=["retired", "retired_automatically", "retired_reason",
                                  "updated_at"])
        _audit(team=skill.team, user=user, action="skill_retired" if retired else "skill_restored",
               target=skill, details={"title": skill.title})
        _skill_index(skill)
    return skill


def user_may_restore(user, skill: Skill) -> bool:
    """Reviewers (and engineers, admins) of the skill's team may bring a retired skill back."""
    return user_may(user, skill.team, "review") or user_may(user, skill.team, "upload")


def skill_restore(skill: Skill, *, user=None) -> Skill:
    """Bring a retired skill back (also one retired automatically); only its uses from now
    on count towards retiring it again."""
    if not user_may_restore(user, skill):
        _require(user, skill.team, "review", "Restoring skills")
    with transaction.atomic():
        was_automatic = skill.retired_automatically
        skill.retired, skill.retired_automatically, skill.retired_reason = False, False, ""
        skill.restored_at = timezone.now()
        skill.save(update_fields=["retired", "retired_automatically", "retired_reason",
                                  "restored_at", "updated_at"])
        _audit(team=skill.team, user=user, action="skill_restored", target=skill,
               details={"title": skill.title, "was_retired_automatically": was_automatic})
        _skill_index(skill)
    return skill


def skill_set_shared(*, skill: Skill, shared: bool, user) -> Skill:
    """Share a skill with every team (or stop sharing it): admins only."""
    _require(user, skill.team, "manage", "Sharing a skill with every team")
    if skill.shared == bool(shared):
        return skill
    with transaction.atomic():
        skill.shared = bool(shared)
        skill.save(update_fields=["shared", "updated_at"])
        _audit(team=skill.team, user=user, action="skill_shared" if shared else "skill_unshared",
               target=skill, details={"title": skill.title})
        _skill_index(skill)
    return skill


def skill_assign_team(*, skill: Skill, team, user) -> Skill:
    """Give a skill to a team (e.g. one merged across teams before skills had teams)."""
    _require(user, skill.team, "manage", "Moving skills")
    if team is not None:
        _require(user, team, "manage", "Moving skills")
    if skill.team_id == getattr(team, "pk", None):
        return skill
    old_team = skill.team
    with transaction.atomic():
        skill.team = team
        skill.save(update_fields=["team", "updated_at"])
        details = {"title": skill.title, "from_team": getattr(old_team, "pk", None),
                   "to_team": getattr(team, "pk", None)}
        for side in {old_team, team}:
            _audit(team=side, user=user, action="skill_team_changed", target=skill, details=details)
        _skill_index(skill)
    return skill
