"""Who a document or skill belongs to: sharing it with every team and moving it to another
team, one rule for both kinds of row (admins only, both sides recorded in the audit trail,
the vectors' metadata rewritten so scoped retrieval follows at once)."""

from __future__ import annotations

from typing import Callable, TypeVar

from django.db import transaction

from knowledge.models import Document, Skill
from knowledge.services.access import audit, require_role
from knowledge.services.indexing import sync_chunk_metadata
from knowledge.services.skills import skill_index

Row = TypeVar("Row", Document, Skill)


def _set_shared(row: Row, *, shared: bool, user, kind: str,
                reindex: Callable[[Row], None]) -> Row:
    """Share `row` (a `kind`: "document" or "skill") with every team, or stop sharing it."""
    require_role(user, row.team, "manage", f"Sharing a {kind} with every team")
    if row.shared == bool(shared):
        return row
    with transaction.atomic():
        row.shared = bool(shared)
        row.save(update_fields=["shared", "updated_at"])
        audit(team=row.team, user=user, action=f"{kind}_{'shared' if shared else 'unshared'}",
              target=row, details={"title": row.title})
        reindex(row)
    return row


def _assign_team(row: Row, *, team, user, kind: str, reindex: Callable[[Row], None]) -> Row:
    """Give `row` to `team` (None: no team): admins of both sides; both trails record it."""
    require_role(user, row.team, "manage", f"Moving {kind}s")
    if team is not None:
        require_role(user, team, "manage", f"Moving {kind}s")
    if row.team_id == getattr(team, "pk", None):
        return row
    old_team = row.team
    with transaction.atomic():
        row.team = team
        row.save(update_fields=["team", "updated_at"])
        details = {"title": row.title, "from_team": getattr(old_team, "pk", None),
                   "to_team": getattr(team, "pk", None)}
        for side in {old_team, team}:  # both teams' trails (None: no team's)
            audit(team=side, user=user, action=f"{kind}_team_changed", target=row,
                  details=details)
        reindex(row)
    return row


def document_set_shared(*, document: Document, shared: bool, user) -> Document:
    """Share a document with every team (or stop sharing it): admins only."""
    return _set_shared(document, shared=shared, user=user, kind="document",
                       reindex=sync_chunk_metadata)


def document_assign_team(*, document: Document, team, user) -> Document:
    """Give a document to a team (e.g. a legacy one no team owns): admins of both sides."""
    return _assign_team(document, team=team, user=user, kind="document",
                        reindex=sync_chunk_metadata)


def skill_set_shared(*, skill: Skill, shared: bool, user) -> Skill:
    """Share a skill with every team (or stop sharing it): admins only."""
    return _set_shared(skill, shared=shared, user=user, kind="skill", reindex=skill_index)


def skill_assign_team(*, skill: Skill, team, user) -> Skill:
    """Give a skill to a team (e.g. one merged across teams before skills had teams)."""
    return _assign_team(skill, team=team, user=user, kind="skill", reindex=skill_index)
