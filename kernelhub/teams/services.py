"""Writes about teams, memberships and API keys."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
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


def membership_set(*, team: Team, user: AbstractBaseUser, role: str) -> Membership:
    if role not in Role.values:
        raise ValidationError(f"Unknown role {role!r}; choose one of {', '.join(Role.values)}.")
    membership, _ = Membership.objects.update_or_create(
        team=team, user=user, defaults={"role": role}
    )
    return membership


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
    if scope not in ApiKeyScope.values:
        raise ValidationError(f"Unknown scope {scope!r}; choose one of {', '.join(ApiKeyScope.values)}.")
    if created_by is not None and not user_can(created_by, team, "manage"):
        raise PermissionDenied("Only team admins create API keys.")
    raw_key = API_KEY_PREFIX + secrets.token_urlsafe(32)
    api_key = ApiKey.objects.create(
        team=team,
        name=name.strip() or "API key",
        prefix=raw_key[: len(API_KEY_PREFIX) + 6],
        hashed_key=hash_api_key(raw_key),
        scope=scope,
        created_by=created_by,
    )
    return IssuedApiKey(api_key=api_key, raw_key=raw_key)


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
    if actor is not None and not user_can(actor, api_key.team, "manage"):
        raise PermissionDenied("Only team admins revoke API keys.")
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
    return api_key
