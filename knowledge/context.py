"""The search's door to the knowledge base: a ContextProvider over manuals and skills.

The search asks by category in the shared vocabulary of search_engine/search/categories.py,
which `knowledge.models.Category` stores (a test fails when they drift); a category outside
it is dropped with a warning rather than failing the whole retrieval.
"""

from __future__ import annotations

import logging
from typing import Any

from search_engine.protocols import ContextPassage
from search_engine.search.categories import bottleneck_query
from search_engine.search.categories import unknown as unknown_categories

logger = logging.getLogger(__name__)

MAX_ERROR_CHARS = 300


def build_query(problem: str = "", diagnosis: Any = None, errors: list[str] | None = None) -> str:
    """One retrieval query from the problem, a node's diagnosis and its errors."""
    parts = [problem.strip()] if problem else []
    if isinstance(diagnosis, dict):
        bottleneck = str(diagnosis.get("bottleneck") or "")
        if bottleneck:
            parts.append(f"{bottleneck}-bound kernel")
            keyed = bottleneck_query(bottleneck)  # the search loop's phrase, one rule
            if keyed is not None:
                parts.append(keyed[0])
        for name in ("registers", "spills", "occupancy"):
            if diagnosis.get(name):
                parts.append(f"{name} {diagnosis[name]}")
    elif diagnosis:
        parts.append(str(diagnosis))
    for error in errors or []:
        parts.append(str(error)[:MAX_ERROR_CHARS])
    return "\n".join(p for p in parts if p)


class KnowledgeContextProvider:
    """Manual passages for the session's hardware (plus vendor-neutral pages) and the
    distilled skills that match, as ContextPassages.

    A session reads what its team may read: the team's documents and skills plus shared
    ones (`team_id`); with no team it reads shared rows only."""

    def __init__(self, skills: int = 2, *, team_id: int | None = None, scope=None) -> None:
        from knowledge.selectors import KnowledgeScope

        self.skills = skills
        self.scope = scope if scope is not None else KnowledgeScope.for_teams(
            [team_id] if team_id is not None else [])

    def retrieve(self, query: str, hardware: str | None = None,
                 categories: list[str] | None = None, k: int = 5) -> list[ContextPassage]:
        from knowledge.selectors import passage_search, skill_search

        if categories and unknown_categories(categories):
            logger.warning("dropping unknown knowledge categories %s",
                           unknown_categories(categories))
            categories = [c for c in categories if c not in unknown_categories(categories)]
            categories = categories or None
        passages = [
            ContextPassage(
                text=c.text, document=c.document, score=c.score, page=c.page, section=c.section,
                kind="document",
                metadata={"chunk_id": c.chunk_id, "document_id": c.document_id,
                          "vendor": c.vendor, "hardware": c.hardware, "category": c.category},
            )
            for c in passage_search(scope=self.scope, query=query, hardware=hardware,
                                    categories=categories, k=k)
        ]
        if self.skills and query.strip():
            from knowledge.skills import skill_effect, skill_text

            for skill, score in skill_search(query, scope=self.scope, hardware=hardware,
                                             k=self.skills):
                passages.append(ContextPassage(
                    text=skill_text(skill), document=f"skill: {skill.title}", score=score,
                    section=skill.family, kind="skill",
                    metadata={"skill_id": skill.pk, "hardware": skill.hardware,
                              "transformation": skill.transformation,
                              **skill_effect(skill)},
                ))
        return passages

    def skill_priors(self, families, hardware: str = "") -> list:
        """The search's door to skills as priors (search_engine.search.skill_priors)."""
        from knowledge.selectors import skill_priors

        return skill_priors(scope=self.scope, families=families, hardware=hardware)

    def retrieve_for_node(self, *, problem: str = "", diagnosis: Any = None,
                          errors: list[str] | None = None, hardware: str | None = None,
                          k: int = 5) -> list[ContextPassage]:
        return self.retrieve(build_query(problem, diagnosis, errors), hardware=hardware, k=k)
