"""Per-key (or per-user) request rates. Rates come from settings, read per request."""

from __future__ import annotations

from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle

from kernelhub.api.scoping import request_api_key

DEFAULT_RATES = {
    "api": "1200/min",         # REST reads and writes
    "evaluations": "120/min",  # submissions to the reward service
    "exports": "600/min",      # CSV/JSON/OData pages (a BI refresh follows many nextLinks)
}


def configured_rates() -> dict[str, str]:
    return {**DEFAULT_RATES, **getattr(settings, "KERNELHUB_API_THROTTLE_RATES", {})}


class PerKeyRateThrottle(SimpleRateThrottle):
    """Counts requests per API key id (per user for browser sessions, per IP otherwise)."""

    scope_attr = "throttle_scope"

    def __init__(self):
        # The scope is only known once the view is; see allow_request.
        pass

    def allow_request(self, request, view):
        self.scope = getattr(view, self.scope_attr, None) or "api"
        self.rate = configured_rates().get(self.scope)
        if self.rate is None:
            return True
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request, view)

    def get_cache_key(self, request, view) -> str:
        api_key = request_api_key(request)
        if api_key is not None:
            ident = f"key-{api_key.pk}"
        elif request.user and request.user.is_authenticated:
            ident = f"user-{request.user.pk}"
        else:
            ident = f"ip-{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}
