"""Who may write to the knowledge base, and the audit trail of what they changed.

Engineers and admins ("upload") add, edit, re-index and delete their team's documents and
skills; only admins ("manage", or a superuser) share them with every team. `user=None` is
the system itself (management commands, the session runner)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied

from kernelhub.teams.selectors import user_can


def user_may(user, team, action: str) -> bool:
    """Whether `user` may do `action` to a row owned by `team` (None: no team owns it)."""
    if user is None:  # the system: management commands, the session runner
        return True
    if not getattr(user, "is_authenticated", False):
        return False
    if getattr(user, "is_superuser", False):
        return True
    return team is not None and user_can(user, team, action)


def require_role(user, team, action: str, what: str) -> None:
    if user_may(user, team, action):
        return
    where = f"team {team.name!r}" if team is not None else "rows no team owns (superusers only)"
    need = {"manage": "an admin", "review": "a reviewer, engineer or admin"}.get(
        action, "an engineer or admin")
    raise PermissionDenied(f"{what} in {where} needs {need} role.")


def audit(*, team, user, action: str, target, details: dict) -> None:
    from kernelhub.review.services import audit_record

    audit_record(team=team, actor=user, action=action, target=target, details=details)
