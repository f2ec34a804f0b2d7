"""Who is asking and which teams' rows they may see.

An API key sees exactly its own team. A browser session sees the user's teams. Every
queryset of the API and of the exports starts from `visible_team_ids(request)`; never
from `request.user` alone (for key requests it is a principal, not a team member).
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from rest_framework.exceptions import PermissionDenied, ValidationError

from kernelhub.teams.models import ApiKey, Team
from kernelhub.teams.selectors import team_ids_for_user, user_can


def request_api_key(request) -> ApiKey | None:
    auth = getattr(request, "auth", None)
    return auth if isinstance(auth, ApiKey) else None


def visible_team_ids(request) -> list[int]:
    api_key = request_api_key(request)
    if api_key is not None:
        return [api_key.team_id]
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return []
    return team_ids_for_user(user)


def acting_user(request) -> AbstractBaseUser:
    """The user that services see as the actor.

    For a key it is the admin who created it (its current role in the key's team still
    applies); a key whose creator is gone cannot change anything."""
    api_key = request_api_key(request)
    if api_key is None:
        return request.user
    if api_key.created_by is None or not api_key.created_by.is_active:
        raise PermissionDenied(
            "This API key has no active creator to act for; ask a team admin for a new key."
        )
    return api_key.created_by


def require_role(request, team: Team, action: str) -> AbstractBaseUser:
    """The acting user, if they may do `action` in `team`; else 403 with the reason."""
    user = acting_user(request)
    if team.pk not in visible_team_ids(request) or not user_can(user, team, action):
        raise PermissionDenied(f"Your role in team {team.name!r} does not allow '{action}'.")
    return user


def team_for_write(request, team_id: int | None, action: str) -> Team:
    """The team a new object goes to: the key's team, or the one named (or the only one)."""
    api_key = request_api_key(request)
    if api_key is not None:
        if team_id not in (None, api_key.team_id):
            raise PermissionDenied("An API key can only write to its own team.")
        team = api_key.team
    else:
        ids = visible_team_ids(request)
        if team_id is None:
            candidates = [
                t for t in Team.objects.filter(pk__in=ids) if user_can(request.user, t, action)
            ]
            if not candidates:
                raise PermissionDenied(f"None of your teams lets your role do '{action}'.")
            if len(candidates) > 1:
                raise ValidationError({"team": f"Say which team: your role may '{action}' in "
                                               f"{len(candidates)} teams."})
            team = candidates[0]
        else:
            team = Team.objects.filter(pk=team_id, pk__in=ids).first()
            if team is None:
                raise PermissionDenied("You are not a member of that team.")
    require_role(request, team, action)
    return team
