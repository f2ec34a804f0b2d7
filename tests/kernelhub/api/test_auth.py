"""API-key authentication (header and query string), revocation and per-key throttling."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from kernelhub.teams.models import ApiKey

pytestmark = pytest.mark.django_db


def test_header_and_query_string_keys_authenticate(api_keys, workspace):
    key = api_keys[("alpha", "read")]
    client = APIClient()
    assert client.get("/api/v1/teams/", HTTP_AUTHORIZATION=f"Api-Key {key}").status_code == 200
    assert client.get("/api/v1/teams/", HTTP_AUTHORIZATION=f"api-key   {key}").status_code == 200
    assert client.get(f"/api/v1/teams/?api_key={key}").status_code == 200
    row = ApiKey.objects.get(name="alpha-read")
    assert row.last_used_at is not None


@pytest.mark.parametrize("header, query", [
    ("Api-Key khk_not-a-real-key", ""), ("Api-Key ", ""), ("", "?api_key=nope"),
    ("", "?api_key="),
])
def test_bad_keys_get_401(workspace, header, query):
    client = APIClient()
    extra = {"HTTP_AUTHORIZATION": header} if header else {}
    response = client.get("/api/v1/sessions/" + query, **extra)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Api-Key")


def test_revoked_keys_stop_working(api_keys, key_client, workspace):
    from kernelhub.teams.services import api_key_revoke

    client = key_client(api_keys[("alpha", "write")])
    assert client.get("/api/v1/sessions/").status_code == 200
    api_key_revoke(api_key=ApiKey.objects.get(name="alpha-write"))
    response = client.get("/api/v1/sessions/")
    assert response.status_code == 401 and "revoked" in response.json()["detail"]


def test_requests_are_throttled_per_key(api_keys, key_client, workspace, settings):
    settings.KERNELHUB_API_THROTTLE_RATES = {"api": "5/min", "exports": "2/min"}
    alpha = key_client(api_keys[("alpha", "read")])
    codes = [alpha.get("/api/v1/sessions/").status_code for _ in range(6)]
    assert codes == [200] * 5 + [429]
    assert int(alpha.get("/api/v1/sessions/")["Retry-After"]) > 0
    # the other key of the same team has its own counter
    assert key_client(api_keys[("alpha", "write")]).get("/api/v1/sessions/").status_code == 200
    # feeds and exports count separately
    assert [alpha.get("/odata/kernels").status_code for _ in range(3)] == [200, 200, 429]


def test_session_users_are_throttled_per_user(user_client, workspace, settings):
    settings.KERNELHUB_API_THROTTLE_RATES = {"api": "2/min"}
    viewer = user_client("alpha", "viewer")
    assert [viewer.get("/api/v1/teams/").status_code for _ in range(3)] == [200, 200, 429]
    assert user_client("alpha", "engineer").get("/api/v1/teams/").status_code == 200


def test_browser_sessions_need_csrf_for_writes(teams, library_problem, hardware):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(teams["users"][("alpha", "engineer")])
    response = client.post("/api/v1/sessions/", {"problem": library_problem.pk,
                                                 "hardware": "interpreter", "start": False},
                           format="json")
    assert response.status_code == 403 and "CSRF" in response.json()["detail"]


def test_teams_report_the_role_or_key_scope(api_keys, key_client, user_client, workspace):
    (team,) = key_client(api_keys[("beta", "write")]).get("/api/v1/teams/").json()["results"]
    assert team["name"] == "beta" and team["role"] == "api-key:write"
    (team,) = user_client("alpha", "reviewer").get("/api/v1/teams/").json()["results"]
    assert team["role"] == "reviewer"
