"""`Authorization: Api-Key <key>` (or `?api_key=<key>` for BI tools) authentication."""

from __future__ import annotations

from rest_framework import authentication, exceptions

from kernelhub.teams.models import ApiKey
from kernelhub.teams.services import api_key_authenticate

KEYWORD = "Api-Key"
QUERY_PARAM = "api_key"


class ApiKeyPrincipal:
    """`request.user` for key requests: authenticated, but a key, not a team member.

    Anything that scopes by user (rather than by `visible_team_ids`) fails loudly on it
    instead of leaking another team's rows."""

    is_authenticated = True
    is_anonymous = False
    is_active = True
    is_staff = False
    is_superuser = False
    pk = None
    id = None

    def __init__(self, api_key: ApiKey):
        self.api_key = api_key
        self.username = f"api-key:{api_key.prefix}"

    def __str__(self) -> str:
        return self.username


class ApiKeyAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request):
        raw = self._raw_key(request)
        if raw is None:
            return None
        api_key = api_key_authenticate(raw)
        if api_key is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked API key.")
        return ApiKeyPrincipal(api_key), api_key

    @staticmethod
    def _raw_key(request) -> str | None:
        header = authentication.get_authorization_header(request).decode("latin-1").strip()
        if header:
            keyword, _, value = header.partition(" ")
            if keyword.lower() == KEYWORD.lower():
                if not value.strip():
                    raise exceptions.AuthenticationFailed(
                        "Empty API key in the Authorization header.")
                return value.strip()
            return None  # another scheme (e.g. Basic): not ours
        value = request.query_params.get(QUERY_PARAM) if hasattr(request, "query_params") \
            else request.GET.get(QUERY_PARAM)
        if value is not None:
            return value.strip()
        return None

    def authenticate_header(self, request) -> str:
        # Makes DRF answer 401 (with WWW-Authenticate) rather than 403 to anonymous callers.
        return f'{KEYWORD} realm="KernelHub"'
