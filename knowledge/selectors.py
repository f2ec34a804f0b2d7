"""Reads of the knowledge base (documents, chunks, skills), always within a scope.

Who may read what: a team's members (and its API keys) read the team's documents and
skills plus every row an admin marked `shared`; staff and superusers also read rows no
team owns yet (legacy). The membership rule itself is kernelhub.teams.selectors'. Every
page, API endpoint and session context asks through a `KnowledgeScope`; foreign rows are
"not found" (404), so their existence is not revealed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db.models import Q, QuerySet
from django.http import Http404

from knowledge.models import Chunk, Document, Skill, SkillUse
from knowledge.scope import KnowledgeScope, and_where

if TYPE_CHECKING:
    from knowledge.retrieval import RetrievedChunk


# --- documents -------------------------------------------------------------------------------

def document_list(*, scope: KnowledgeScope, status: str | None = None) -> QuerySet[Document]:
    documents = Document.objects.filter(scope.q()).select_related("uploaded_by", "team")
    return documents.filter(status=status) if status else documents


def document_get(*, scope: KnowledgeScope, document_id: int) -> Document:
    try:
        return document_list(scope=scope).get(pk=document_id)
    except Document.DoesNotExist:
        raise Http404("No such document in your teams.")


def document_find_duplicate(content_hash: str, *, team=None) -> Document | None:
    """The stored document with these bytes that `team` can see (its own or a shared one;
    failed uploads do not count). Another team's private copy is not a duplicate."""
    team_id = getattr(team, "pk", team)
    same_owner = Q(team_id=team_id) if team_id is not None else Q(team__isnull=True)
    return (
        Document.objects.filter(content_hash=content_hash)
        .filter(same_owner | Q(shared=True))
        .exclude(status=Document.Status.FAILED)
        .order_by("created_at")
        .first()
    )


def chunk_list(document: Document) -> QuerySet[Chunk]:
    return document.chunks.order_by("ordinal")


def passage_search(*, scope: KnowledgeScope, query: str, hardware: str | None = None,
                   categories: list[str] | None = None, k: int = 5) -> list["RetrievedChunk"]:
    """Hybrid search over the manuals in scope (see knowledge.retrieval.retrieve)."""
    from knowledge.retrieval import retrieve

    return retrieve(query, hardware=hardware, categories=categories, k=k, scope=scope)


# --- skills ----------------------------------------------------------------------------------

def skill_list(*, scope: KnowledgeScope, query: str = "", include_retired: bool = False,
               hardware: str = "") -> QuerySet[Skill]:
    skills = Skill.objects.filter(scope.q()).select_related("team")
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


def skill_get(*, scope: KnowledgeScope, skill_id: int) -> Skill:
    try:
        return Skill.objects.filter(scope.q()).select_related("team").get(pk=skill_id)
    except Skill.DoesNotExist:
        raise Http404("No such skill in your teams.")


def skill_search(query: str, *, scope: KnowledgeScope, hardware: str | None = None, k: int = 3,
                 min_similarity: float = 0.3) -> list[tuple[Skill, float]]:
    """Active skills in scope nearest in meaning to `query` (cosine), best first."""
    from knowledge import store
    from knowledge.embeddings import embed_query
    from knowledge.skills import skill_where

    active = Skill.objects.filter(scope.q(), retired=False)
    if not active.exists():
        return []
    where = and_where(skill_where(hardware), scope.chroma_where())
    hits = store.query(store.SKILLS, embed_query(query), k, where=where)
    hits = [(int(id_.removeprefix("skill-")), score) for id_, score in hits if score >= min_similarity]
    skills = active.in_bulk([skill_id for skill_id, _ in hits])  # the database has the last word
    return [(skills[i], score) for i, score in hits if i in skills]


def skill_priors(*, scope: KnowledgeScope, families, hardware: str = "") -> list:
    """Active skills in scope for these operator families and this hardware (or generic), as
    the search's priors (search_engine.search.skill_priors.SkillPrior), best first."""
    from search_engine.search.skill_priors import rank
    from knowledge.skills import skill_prior

    names = {str(f).lower() for f in families if f}
    hardware = (hardware or "").lower()
    skills = Skill.objects.filter(scope.q(), retired=False, family__in=names).filter(
        Q(hardware=hardware) | Q(hardware__in=["", "generic"]))
    return rank([skill_prior(s) for s in skills.order_by("pk")], "")


def skill_use_list(skill: Skill, *, scope: KnowledgeScope, limit: int = 50) -> list[SkillUse]:
    """The skill's latest uses in later sessions (its record on the skill page). A shared
    skill is used by other teams too: their sessions count but are not named
    (`session_visible` False)."""
    uses = list(skill.uses_record.select_related("session", "session__problem")[:limit])
    for use in uses:
        team_id = use.session.team_id if use.session is not None else None
        use.session_visible = use.session is not None and (
            scope.everything or team_id in scope.team_ids)
    return uses


# --- the dashboard's summary ---------------------------------------------------------------------

def knowledge_stats(*, scope: KnowledgeScope) -> dict:
    """{"documents", "ready", "chunks", "skills"} visible in `scope` (the dashboard's card).

    Same rule as every read here: the scope's teams, shared rows, and (staff) rows of no
    team. `documents` counts every upload in scope, `ready` the indexed ones; `chunks` are
    those of documents in scope; retired skills are not counted."""
    from django.db.models import Count

    documents = Document.objects.filter(scope.q())
    counts = documents.aggregate(documents=Count("pk"), ready=Count(
        "pk", filter=Q(status=Document.Status.READY)))
    return {
        "documents": counts["documents"], "ready": counts["ready"],
        "chunks": Chunk.objects.filter(document__in=documents).count(),
        "skills": Skill.objects.filter(scope.q(), retired=False).count(),
    }
