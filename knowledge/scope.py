"""Who may read which knowledge rows: the scope every read of documents, chunks and skills
goes through (knowledge.selectors, knowledge.retrieval). The membership rule itself is
kernelhub.teams.selectors'."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from django.db.models import Q

from kernelhub.teams.selectors import team_ids_for_user

# Chroma metadata value of `team_id` for rows no team owns (team primary keys start at 1).
NO_TEAM = 0


@dataclass(frozen=True)
class KnowledgeScope:
    """Which documents and skills a reader may see."""

    team_ids: tuple[int, ...] = ()
    unassigned: bool = False  # rows without a team (staff and superusers only)
    everything: bool = False  # operator tools (management commands, benchmarks)

    ALL: ClassVar["KnowledgeScope"]

    @classmethod
    def for_user(cls, user) -> "KnowledgeScope":
        if user is None or not user.is_authenticated:
            return cls()
        staff = bool(getattr(user, "is_staff", False) or getattr(user, "is_superuser", False))
        return cls(team_ids=tuple(team_ids_for_user(user)), unassigned=staff)

    @classmethod
    def for_teams(cls, team_ids, *, unassigned: bool = False) -> "KnowledgeScope":
        return cls(team_ids=tuple(int(t) for t in team_ids if t is not None), unassigned=unassigned)

    def q(self) -> Q:
        """The rows (documents or skills) in scope, as a filter on their own fields."""
        if self.everything:
            return Q()
        visible = Q(shared=True) | Q(team_id__in=self.team_ids)
        return visible | Q(team__isnull=True) if self.unassigned else visible

    def chroma_where(self) -> dict | None:
        """The same rule on Chroma metadata (`team_id`, `shared`), for chunks and skills."""
        if self.everything:
            return None
        ids = [*self.team_ids, *([NO_TEAM] if self.unassigned else [])]
        if not ids:
            return {"shared": True}
        return {"$or": [{"team_id": {"$in": ids}}, {"shared": True}]}


KnowledgeScope.ALL = KnowledgeScope(everything=True)


def and_where(*clauses: dict | None) -> dict | None:
    """Chroma `where` clauses combined with $and (None ones dropped)."""
    present = [c for c in clauses if c]
    if not present:
        return None
    return present[0] if len(present) == 1 else {"$and": present}
