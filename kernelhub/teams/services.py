"""Writes about teams, memberships and API keys."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from kernelhub.teams.models import ApiKey, ApiKeyScope, Membership, Role, Team
from kernelhub.teams.selectors import user_can

API_KEY_PREFIX = "khk_"


def team_create(*, name: str, creator: AbstractBaseUser | None = None) -> Team:
    name = name.strip()
    if not name:
        raise ValidationError("A team needs a name.")
    team = Team.objects.create(name=name, slug=slugify(name)[:100] or secrets.token_hex(4))
    if creator is not None:
        Membership.objects.create(team=team, user=creator, role=Role.ADMIN)
    return team


def _may_manage(actor: AbstractBaseUser | None, team: Team) -> bool:
    # None: the system (fixtures, management commands); superusers manage every team.
    return actor is None or getattr(actor, "is_superuser", False) or user_can(actor, team, "manage")


def membership_set(*, team: Team, user: AbstractBaseUser, role: str,
                   actor: AbstractBaseUser | None = None) -> Membership:
    """Give `user` the `role` in `team` (adding them if needed); audited when it changes."""
    from kernelhub.review.services import audit_record

    if role not in Role.values:
        raise ValidationError(f"Unknown role {role!r}; choose one of {', '.join(Role.values)}.")
    if not _may_manage(actor, team):
        raise PermissionDenied("Only team admins change roles.")
    with transaction.atomic():
        existing = Membership.objects.select_for_update().filter(team=team, user=user).first()
        old_role = existing.role if existing is not None else None
        membership, _ = Membership.objects.update_or_create(
            team=team, user=user, defaults={"role": role}
        )
        if old_role != role:
            audit_record(team=team, actor=actor, action="membership_role_changed",
                         target=membership,
                         details={"user": user.get_username(), "user_id": user.pk,
                                  "old_role": old_role, "new_role": role})
    return membership


def membership_remove(*, membership: Membership, actor: AbstractBaseUser | None = None) -> None:
    """Take a user out of a team; audited."""
    from kernelhub.review.services import audit_record

    if not _may_manage(actor, membership.team):
        raise PermissionDenied("Only team admins change roles.")
    with transaction.atomic():
        audit_record(team=membership.team, actor=actor, action="membership_removed",
                     target=membership,
                     details={"user": membership.user.get_username(),
                              "user_id": membership.user_id, "old_role": membership.role,
                              "new_role": None})
        membership.delete()


def hash_api_key(raw_key: str) -> str:
    # Keys are 32 random bytes: a fast hash is safe here (no dictionary to attack).
    return hashlib.sha256(raw_key.encode()).hexdigest()


@dataclass(frozen=True)
class IssuedApiKey:
    api_key: ApiKey
    raw_key: str  # shown to the user once, never stored


def api_key_create(
    *, team: Team, name: str, scope: str = ApiKeyScope.READ_ONLY, created_by=None
) -> IssuedApiKey:
    """Issue a key; the raw key is in the result only. A key acts for its creator, so the
    creator must be an admin of the team (`created_by=None`: a key made by the system)."""
    if scope not in ApiKeyScope.values:
        raise ValidationError(f"Unknown scope {scope!r}; choose one of {', '.join(ApiKeyScope.values)}.")
    if created_by is not None and not user_can(created_by, team, "manage"):
        raise PermissionDenied("Only team admins create API keys.")
    raw_key = API_KEY_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        api_key = ApiKey.objects.create(
            team=team,
            name=name.strip()[:100] or "API key",
            prefix=raw_key[: len(API_KEY_PREFIX) + 6],
            hashed_key=hash_api_key(raw_key),
            scope=scope,
            created_by=created_by,
        )
        _audit(api_key, actor=created_by, action="api_key_created")
    return IssuedApiKey(api_key=api_key, raw_key=raw_key)


def _audit(api_key: ApiKey, *, actor, action: str) -> None:
    from kernelhub.review.services import audit_record  # the one audit trail

    audit_record(team=api_key.team, actor=actor, action=action, target=api_key,
                 details={"name": api_key.name, "prefix": api_key.prefix,
                          "scope": api_key.scope})


def _may_manage_keys(user: AbstractBaseUser, team: Team) -> bool:
    # Team admins; and staff whom Django's permissions let change keys (the admin site).
    return user_can(user, team, "manage") or (
        user.is_active and user.is_staff and user.has_perm("teams.change_apikey"))


def api_key_authenticate(raw_key: str) -> ApiKey | None:
    """The active key matching `raw_key`, with its last-used time refreshed; else None."""
    if not raw_key or not raw_key.startswith(API_KEY_PREFIX):
        return None
    api_key = (
        ApiKey.objects.select_related("team")
        .filter(hashed_key=hash_api_key(raw_key), revoked_at__isnull=True)
        .first()
    )
    if api_key is not None:
        now = timezone.now()
        ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
        api_key.last_used_at = now
    return api_key


def api_key_revoke(*, api_key: ApiKey, actor: AbstractBaseUser | None = None) -> ApiKey:
    """Revoke a key (at once: the next request with it gets 401). Revoking twice is a no-op."""
    if actor is not None and not _may_manage_keys(actor, api_key.team):
        raise PermissionDenied("Only team admins revoke API keys.")
    with transaction.atomic():
        locked = ApiKey.objects.select_for_update().get(pk=api_key.pk)
        if locked.revoked_at is None:
            locked.revoked_at = timezone.now()
            locked.save(update_fields=["revoked_at"])
            _audit(locked, actor=actor, action="api_key_revoked")
    api_key.revoked_at = locked.revoked_at
    return api_key
