"""Styled 403/404/500 pages (JSON under /api/ and /odata/); with DEBUG off no debug page."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
from django.core.exceptions import PermissionDenied
from django.urls import path

import kernelhub.urls

pytestmark = pytest.mark.django_db
REPO = Path(__file__).resolve().parents[2]


def _raise(request):
    raise RuntimeError("secret-internal-detail")


def _forbid(request):
    raise PermissionDenied("Only admins of team 'alpha' may do this.")


@pytest.fixture
def boom_urls(settings):
    """The project's URLs and error handlers, plus views that fail."""
    module = types.ModuleType("kernelhub_test_error_urls")
    module.urlpatterns = [path("boom/", _raise), path("forbid/", _forbid),
                          path("api/v1/boom/", _raise), *kernelhub.urls.urlpatterns]
    for name in ("handler400", "handler403", "handler404", "handler500"):
        setattr(module, name, getattr(kernelhub.urls, name))
    sys.modules[module.__name__] = module
    settings.ROOT_URLCONF = module.__name__
    settings.DEBUG = False
    yield module
    sys.modules.pop(module.__name__, None)


def assert_styled(response, status, heading):
    page = response.content.decode()
    assert response.status_code == status
    assert heading in page and 'id="error-page"' in page
    assert "kernelhub.css" in page and 'class="topbar"' in page  # the site's base template
    assert "Traceback" not in page and "technical_500" not in page


def test_a_view_that_raises_gets_the_styled_500(client, teams, boom_urls):
    client.raise_request_exception = False
    client.force_login(teams["users"][("alpha", "viewer")])
    response = client.get("/boom/")
    assert_styled(response, 500, "Server error (500)")
    assert "secret-internal-detail" not in response.content.decode()


def test_500_renders_even_for_anonymous_and_api_paths_get_json(client, boom_urls):
    client.raise_request_exception = False
    assert_styled(client.get("/boom/"), 500, "Server error (500)")
    response = client.get("/api/v1/boom/")
    assert response.status_code == 500 and response["Content-Type"] == "application/json"
    assert "secret-internal-detail" not in response.content.decode()


def test_403_and_404_are_styled(client, teams, boom_urls):
    client.force_login(teams["users"][("alpha", "viewer")])
    response = client.get("/forbid/")
    assert_styled(response, 403, "You may not do that (403)")
    assert "Only admins of team" in response.content.decode()
    assert_styled(client.get("/no/such/page/"), 404, "Page not found (404)")
    # A real 403 of the app, and a real 404 of a scoped object.
    assert_styled(client.get(f"/teams/{teams['alpha'].slug}/api-keys/"), 403, "(403)")
    assert_styled(client.get(f"/teams/{teams['beta'].slug}/api-keys/"), 404, "(404)")


def test_api_404_stays_json(client, boom_urls):
    response = client.get("/api/v1/no-such-thing/")
    assert response.status_code == 404 and response.json() == {"detail": "Not found."}


def test_project_urls_name_the_handlers():
    for name, view in (("handler403", "error_403"), ("handler404", "error_404"),
                       ("handler500", "error_500")):
        assert getattr(kernelhub.urls, name) == f"kernelhub.views.{view}"


@pytest.mark.parametrize("value,expected", [("0", False),
                                            ("production", False), ("1", True)])
def test_debug_comes_from_the_environment_and_only_yes_turns_it_on(value, expected):
    env = {**os.environ, "DEBUG": value, "SECRET_KEY": "x" * 50,
           "DJANGO_SETTINGS_MODULE": "kernelhub.settings", "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); from django.conf import "
         "settings; print(settings.DEBUG, settings.DEBUG_PROPAGATE_EXCEPTIONS)"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == [str(expected), "False"]
