"""Reads of the knowledge base (documents, chunks, skills)."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from knowledge.models import Chunk, Document, Skill


def document_list(*, status: str | None = None) -> QuerySet[Document]:
    documents = Document.objects.select_related("uploaded_by", "team")
    return documents.filter(status=status) if status else documents


def document_get(document_id: int) -> Document:
    return Document.objects.select_related("uploaded_by", "team").get(pk=document_id)


def document_find_duplicate(content_hash: str) -> Document | None:
    """The stored document with these bytes (failed uploads do not count)."""
    return (
        Document.objects.filter(content_hash=content_hash)
        .exclude(status=Document.Status.FAILED)
        .order_by("created_at")
        .first()
    )


def chunk_list(document: Document) -> QuerySet[Chunk]:
    return document.chunks.order_by("ordinal")


def skill_list(*, query: str = "", include_retired: bool = False,
               hardware: str = "") -> QuerySet[Skill]:
    skills = Skill.objects.all()
    if not include_retired:
        skills = skills.filter(retired=False)
    if hardware:
        skills = skills.filter(hardware=hardware.lower())
    for word in query.split():
        skills = skills.filter(
            Q(title__icontains=word) | Q(description__icontains=word)
            | Q(transformation__icontains=word) | Q(family__icontains=word)
            | Q(bottleneck_before__icontains=word)
        )
    return skills


def skill_get(skill_id: int) -> Skill:
    return Skill.objects.get(pk=skill_id)


def skill_search(query: str, *, hardware: str | None = None, k: int = 3,
                 min_similarity: float = 0.3) -> list[tuple[Skill, float]]:
    """Active skills nearest in meaning to `query` (cosine), best first."""
    from knowledge import store
    from knowledge.embeddings import embed_query
    from knowledge.skills import skill_where

    if not Skill.objects.filter(retired=False).exists():
        return []
    hits = store.query(store.SKILLS, embed_query(query), k, where=skill_where(hardware))
    hits = [(int(id_.removeprefix("skill-")), score) for id_, score in hits if score >= min_similarity]
    skills = Skill.objects.in_bulk([skill_id for skill_id, _ in hits])
    return [(skills[i], score) for i, score in hits if i in skills and not skills[i].retired]
