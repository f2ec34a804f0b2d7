"""The login throttle's backend (django-axes), first in AUTHENTICATION_BACKENDS."""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend


class AxesLoginThrottleBackend(AxesStandaloneBackend):
    """Axes' standalone backend: refuses a locked-out username+IP before the password is
    checked. Axes needs the request (the IP is half of the lockout key); `authenticate()`
    without one comes from code, not from a login form (Django's test client `login()`, a
    management command), so there is no client to throttle: it is let through to
    ModelBackend instead of raising. Every web login (LoginView, the admin) passes the
    request and is throttled."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)
