"""Team membership managed in the app by team admins (issue 32 item 10), audited in words."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from kernelhub.teams.models import Membership

pytestmark = pytest.mark.django_db


def test_an_admin_adds_changes_and_removes_members_and_the_audit_says_so(client, teams):
    newcomer = get_user_model().objects.create_user(username="carol", password="pw-carol")
    assert client.login(username="alpha-admin", password="pw-admin")
    url = reverse("teams:members", args=[teams["alpha"].slug])
    assert client.post(url, {"username": "carol", "role": "reviewer"}).status_code == 302
    assert Membership.objects.get(team=teams["alpha"], user=newcomer).role == "reviewer"
    client.post(url, {"username": "carol", "role": "engineer"})
    missing = client.post(url, {"username": "nobody", "role": "viewer"})
    assert missing.status_code == 400 and "No user named" in missing.content.decode()
    membership = Membership.objects.get(team=teams["alpha"], user=newcomer)
    client.post(reverse("teams:member_remove", args=[teams["alpha"].slug, membership.pk]))
    assert not Membership.objects.filter(pk=membership.pk).exists()
    audit = client.get(reverse("review:audit")).content.decode()
    assert "added carol to the team as reviewer" in audit
    assert "changed carol&#x27;s role from reviewer to engineer" in audit
    assert "removed carol (engineer) from the team" in audit


@pytest.mark.parametrize("role", ["viewer", "engineer", "reviewer"])
def test_only_team_admins_manage_members(client, teams, role):
    assert client.login(username=f"alpha-{role}", password=f"pw-{role}")
    url = reverse("teams:members", args=[teams["alpha"].slug])
    assert client.get(url).status_code == 403
    assert client.post(url, {"username": "beta-viewer", "role": "admin"}).status_code == 403
    assert not Membership.objects.filter(team=teams["alpha"], user__username="beta-viewer").exists()
    assert client.login(username="beta-admin", password="pw-admin")
    assert client.get(url).status_code == 404
