"""Team admins create, list and revoke API keys on the team's page; the Django admin's
keys record their creator and work with their scope; every create/revoke is audited."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from kernelhub.review.models import AuditEvent
from kernelhub.teams.models import ApiKey
from kernelhub.teams.services import hash_api_key, membership_set

pytestmark = pytest.mark.django_db


def keys_url(team):
    return reverse("teams:api_keys", args=[team.slug])


def as_user(client, teams, team, role):
    client.force_login(teams["users"][(team, role)])
    return client


def create(client, team, name="Power BI", scope="read"):
    return client.post(keys_url(team), {"name": name, "scope": scope})


def test_admin_creates_a_key_shown_exactly_once(client, teams):
    alpha = teams["alpha"]
    as_user(client, teams, "alpha", "admin")
    response = create(client, alpha, scope="write")
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    key = ApiKey.objects.get(team=alpha)
    start = page.index('id="raw-key">') + len('id="raw-key">')
    raw = page[start:page.index("</code>", start)]
    assert raw.startswith("khk_") and hash_api_key(raw) == key.hashed_key
    assert key.created_by == teams["users"][("alpha", "admin")] and key.scope == "write"
    # Never again: a reload shows the list (with the prefix) but not the key.
    again = client.get(keys_url(alpha)).content.decode()
    assert raw not in again and key.prefix in again and "alpha-admin" in again
    assert "Read-write" in again and "never" in again  # scope, and last used


def test_created_key_writes_with_its_scope(client, teams, library_problem, hardware):
    alpha = teams["alpha"]
    as_user(client, teams, "alpha", "admin")
    keys = {}
    for scope in ("read", "write"):
        location = create(client, alpha, name=scope, scope=scope)["Location"]
        page = client.get(location).content.decode()
        start = page.index('id="raw-key">') + len('id="raw-key">')
        keys[scope] = page[start:page.index("</code>", start)]
    body = {"problem": library_problem.pk, "hardware": "interpreter", "start": False}
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Api-Key {keys['read']}")
    assert api.post("/api/v1/sessions", body, format="json").status_code == 403
    api.credentials(HTTP_AUTHORIZATION=f"Api-Key {keys['write']}")
    response = api.post("/api/v1/sessions", body, format="json")
    assert response.status_code == 201, response.content
    # The list shows when it was last used.
    assert "never" not in client.get(keys_url(alpha)).content.decode().split(
        f"key-{ApiKey.objects.get(name='write').pk}")[1].split("</tr>")[0]


def test_revoke_disables_the_key_and_everything_is_audited(client, teams):
    alpha = teams["alpha"]
    as_user(client, teams, "alpha", "admin")
    page = client.get(create(client, alpha)["Location"]).content.decode()
    start = page.index('id="raw-key">') + len('id="raw-key">')
    raw = page[start:page.index("</code>", start)]
    key = ApiKey.objects.get(team=alpha)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Api-Key {raw}")
    assert api.get("/api/v1/teams").status_code == 200
    response = client.post(reverse("teams:api_key_revoke", args=[alpha.slug, key.pk]))
    assert response.status_code == 302
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert api.get("/api/v1/teams").status_code == 401
    actions = list(AuditEvent.objects.filter(target_type="apikey", target_id=str(key.pk))
                   .order_by("id").values_list("action", "actor__username"))
    assert actions == [("api_key_created", "alpha-admin"), ("api_key_revoked", "alpha-admin")]
    assert "api_key_revoked" in client.get(reverse("review:audit")).content.decode()
    # Revoking again changes nothing and records nothing.
    client.post(reverse("teams:api_key_revoke", args=[alpha.slug, key.pk]))
    assert AuditEvent.objects.filter(action="api_key_revoked").count() == 1


@pytest.mark.parametrize("role", ["viewer", "engineer", "reviewer"])
def test_non_admin_members_get_403_on_page_and_posts(client, teams, role):
    alpha = teams["alpha"]
    key = ApiKey.objects.create(team=alpha, name="k", prefix="khk_abc", hashed_key="x" * 64)
    as_user(client, teams, "alpha", role)
    assert client.get(keys_url(alpha)).status_code == 403
    assert create(client, alpha).status_code == 403
    assert client.post(reverse("teams:api_key_revoke", args=[alpha.slug, key.pk])
                       ).status_code == 403
    assert ApiKey.objects.filter(team=alpha).count() == 1
    key.refresh_from_db()
    assert key.revoked_at is None


def test_other_teams_admins_get_404_and_anonymous_users_the_login(client, teams):
    alpha = teams["alpha"]
    key = ApiKey.objects.create(team=alpha, name="k", prefix="khk_abc", hashed_key="x" * 64)
    assert client.get(keys_url(alpha)).status_code == 302  # to the login page
    as_user(client, teams, "beta", "admin")
    assert client.get(keys_url(alpha)).status_code == 404
    assert create(client, alpha).status_code == 404
    # Not even through their own team's URL.
    assert client.post(reverse("teams:api_key_revoke", args=["beta", key.pk])).status_code == 404
    key.refresh_from_db()
    assert key.revoked_at is None and ApiKey.objects.count() == 1


def test_navigation_links_admins_to_the_page(client, teams):
    as_user(client, teams, "alpha", "admin")
    page = client.get(reverse("dashboard")).content.decode()
    assert f'href="{keys_url(teams["alpha"])}" id="nav-api-keys"' in page
    as_user(client, teams, "alpha", "engineer")
    page = client.get(reverse("dashboard")).content.decode()
    assert "nav-api-keys" not in page and reverse("teams:team_list") in page


def test_bad_form_is_refused_with_400(client, teams):
    as_user(client, teams, "alpha", "admin")
    assert create(client, teams["alpha"], scope="root").status_code == 400
    assert not ApiKey.objects.exists()


@pytest.fixture
def staff(teams):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_superuser("root", "root@example.com", "pw-root")


def test_django_admin_key_records_its_creator_and_writes(client, teams, staff, library_problem,
                                                         hardware):
    alpha = teams["alpha"]
    client.force_login(staff)
    add_url = reverse("admin:teams_apikey_add")
    # Not an admin of the team: refused with a reason (the key would have nobody to act for).
    response = client.post(add_url, {"team": alpha.pk, "name": "bi", "scope": "write"})
    assert response.status_code == 200 and "not an admin of team" in response.content.decode()
    assert not ApiKey.objects.exists()
    membership_set(team=alpha, user=staff, role="admin")
    response = client.post(add_url, {"team": alpha.pk, "name": "bi", "scope": "write"},
                           follow=True)
    assert response.status_code == 200
    key = ApiKey.objects.get()
    assert key.created_by == staff and key.scope == "write"
    message = next(str(m) for m in response.context["messages"] if "shown once" in str(m))
    raw = message.rsplit(" ", 1)[-1]
    assert hash_api_key(raw) == key.hashed_key
    assert AuditEvent.objects.filter(action="api_key_created", actor=staff).exists()
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Api-Key {raw}")
    response = api.post("/api/v1/sessions", {"problem": library_problem.pk,
                                             "hardware": "interpreter", "start": False},
                        format="json")
    assert response.status_code == 201, response.content


def test_django_admin_revocation_is_audited(client, teams, staff):
    from kernelhub.teams.services import api_key_create

    issued = api_key_create(team=teams["alpha"], name="old", scope="read",
                            created_by=teams["users"][("alpha", "admin")])
    client.force_login(staff)
    response = client.post(reverse("admin:teams_apikey_changelist"),
                           {"action": "revoke_keys", "_selected_action": [issued.api_key.pk]})
    assert response.status_code == 302
    issued.api_key.refresh_from_db()
    assert issued.api_key.revoked_at is not None
    assert AuditEvent.objects.filter(action="api_key_revoked", actor=staff,
                                     target_id=str(issued.api_key.pk)).exists()
