"""Logins lock out after repeated failures (django-axes), per username and IP; API keys,
force_login and client.login are unaffected."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.urls import reverse
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_old_attempts():
    from axes.models import AccessAttempt

    AccessAttempt.objects.all().delete()


def attempt(client, username, password, ip="10.0.0.1"):
    return client.post(reverse("login"), {"username": username, "password": password},
                       REMOTE_ADDR=ip)


def fail_until_locked(client, username="alpha-viewer", ip="10.0.0.1"):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        attempt(client, username, "wrong", ip)


def test_settings_follow_the_issue():
    assert settings.AUTHENTICATION_BACKENDS[0] == "kernelhub.auth_backends.AxesLoginThrottleBackend"
    from axes.backends import AxesStandaloneBackend
    from django.utils.module_loading import import_string

    assert issubclass(import_string(settings.AUTHENTICATION_BACKENDS[0]), AxesStandaloneBackend)
    assert settings.AXES_FAILURE_LIMIT == 5
    assert settings.AXES_COOLOFF_TIME.total_seconds() == 15 * 60
    assert settings.AXES_LOCKOUT_PARAMETERS == [["username", "ip_address"]]
    assert "axes" in settings.INSTALLED_APPS
    assert settings.MIDDLEWARE[-1] == "axes.middleware.AxesMiddleware"


def test_failures_below_the_limit_still_show_the_form(client, teams):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        response = attempt(client, "alpha-viewer", "wrong")
        assert response.status_code == 200 and "didn't match" in response.content.decode()
    assert attempt(client, "alpha-viewer", "pw-viewer").status_code == 302  # logged in


def test_lockout_shows_a_styled_page_even_with_the_right_password(client, teams):
    fail_until_locked(client)
    response = attempt(client, "alpha-viewer", "pw-viewer")
    page = response.content.decode()
    assert response.status_code == 429
    assert 'id="locked-out"' in page and "Too many failed logins" in page
    assert "15 minutes" in page and "kernelhub.css" in page
    assert "_auth_user_id" not in client.session


def test_lockout_is_per_username_and_ip(client, teams):
    fail_until_locked(client, "alpha-viewer", "10.0.0.1")
    # The same user from another address, and another user from the same address, log in.
    assert attempt(client, "alpha-viewer", "pw-viewer", ip="10.0.0.2").status_code == 302
    client.logout()
    assert attempt(client, "alpha-engineer", "pw-engineer", ip="10.0.0.1").status_code == 302
    client.logout()
    assert attempt(client, "alpha-viewer", "pw-viewer", ip="10.0.0.1").status_code == 429


def test_lockout_ends_after_the_cool_off(client, teams):
    from axes.models import AccessAttempt
    import datetime as dt

    from django.utils import timezone

    fail_until_locked(client)
    assert attempt(client, "alpha-viewer", "pw-viewer").status_code == 429
    AccessAttempt.objects.update(attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME
                                 - dt.timedelta(seconds=1))
    assert attempt(client, "alpha-viewer", "pw-viewer").status_code == 302


def test_test_client_logins_and_api_keys_still_work(client, teams):
    from kernelhub.teams.services import api_key_create

    fail_until_locked(client)
    assert client.login(username="alpha-viewer", password="pw-viewer")
    assert client.get(reverse("dashboard")).status_code == 200
    client.logout()
    client.force_login(teams["users"][("alpha", "viewer")])
    assert client.get(reverse("dashboard")).status_code == 200
    issued = api_key_create(team=teams["alpha"], name="bi", scope="read",
                            created_by=teams["users"][("alpha", "admin")])
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Api-Key {issued.raw_key}")
    assert api.get("/api/v1/teams").status_code == 200


def test_admin_login_is_throttled_too(client, teams):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post(reverse("admin:login"), {"username": "alpha-admin", "password": "x"},
                    REMOTE_ADDR="10.0.0.9")
    response = client.post(reverse("admin:login"), {"username": "alpha-admin",
                                                    "password": "pw-admin"},
                           REMOTE_ADDR="10.0.0.9")
    assert response.status_code == 429
