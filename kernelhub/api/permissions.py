"""Permission classes: team members only; read-only keys never change anything."""

from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission

from kernelhub.api.scoping import request_api_key, visible_team_ids


class IsTeamMemberOrKey(BasePermission):
    message = "Sign in or send an API key (Authorization: Api-Key <key>)."

    def has_permission(self, request, view) -> bool:
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return False
        if not visible_team_ids(request):
            self.message = "You are not a member of any team."
            return False
        return True


class KeyScopeAllowsMethod(BasePermission):
    message = "This API key is read-only; unsafe methods need a read-write key."

    def has_permission(self, request, view) -> bool:
        api_key = request_api_key(request)
        if api_key is None or request.method in SAFE_METHODS:
            return True
        return api_key.can_write


DEFAULT_PERMISSIONS = [IsTeamMemberOrKey, KeyScopeAllowsMethod]
