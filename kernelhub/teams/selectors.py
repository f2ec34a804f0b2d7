"""Reads about teams and permissions. Every scoped list in the app starts here."""

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404

from kernelhub.teams.models import ApiKey, Membership, Team


def team_list_for_user(user: AbstractBaseUser) -> QuerySet[Team]:
    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(memberships__user=user).distinct()


def team_ids_for_user(user: AbstractBaseUser) -> list[int]:
    return list(team_list_for_user(user).values_list("id", flat=True))


def membership_get(user: AbstractBaseUser, team: Team) -> Membership | None:
    if not user.is_authenticated:
        return None
    return Membership.objects.filter(user=user, team=team).first()


def user_can(user: AbstractBaseUser, team: Team, action: str) -> bool:
    """Whether `user` may do `action` (view, launch, upload, propose, review, manage) in `team`."""
    membership = membership_get(user, team)
    return membership is not None and membership.allows(action)


def teams_where_user_can(user: AbstractBaseUser, action: str) -> list[Team]:
    if not user.is_authenticated:
        return []
    memberships = Membership.objects.filter(user=user).select_related("team")
    return [m.team for m in memberships if m.allows(action)]


def user_can_upload(user: AbstractBaseUser) -> bool:
    return bool(teams_where_user_can(user, "upload"))


def api_key_list(team: Team) -> QuerySet[ApiKey]:
    return ApiKey.objects.filter(team=team).select_related("created_by")


def team_get_for_user(*, user: AbstractBaseUser, slug: str) -> Team:
    """One of the user's teams; 404 for any other (its existence is not revealed)."""
    team = team_list_for_user(user).filter(slug=slug).first()
    if team is None:
        raise Http404("No such team among yours.")
    return team


def team_get_for_admin(*, user: AbstractBaseUser, slug: str) -> Team:
    """A team the user administers: 404 when not a member, 403 when not its admin."""
    team = team_get_for_user(user=user, slug=slug)
    if not user_can(user, team, "manage"):
        raise PermissionDenied(f"Only admins of team {team.name!r} manage its API keys.")
    return team


def api_key_get_for_admin(*, user: AbstractBaseUser, slug: str, pk: int) -> ApiKey:
    team = team_get_for_admin(user=user, slug=slug)
    api_key = api_key_list(team).filter(pk=pk).first()
    if api_key is None:
        raise Http404("No such API key in this team.")
    return api_key


def teams_managed_by(user: AbstractBaseUser) -> list[Team]:
    return teams_where_user_can(user, "manage")
