import pytest
from django.core.exceptions import PermissionDenied

from kernelhub.teams.models import ApiKey
from kernelhub.teams.services import api_key_authenticate, api_key_create, api_key_revoke, hash_api_key

pytestmark = pytest.mark.django_db


def test_keys_are_stored_hashed_and_shown_once(teams):
    issued = api_key_create(team=teams["alpha"], name="bi", scope="read",
                            created_by=teams["users"][("alpha", "admin")])
    row = ApiKey.objects.get(pk=issued.api_key.pk)
    assert issued.raw_key.startswith("khk_")
    assert issued.raw_key not in (row.hashed_key, row.prefix, row.name)
    assert row.hashed_key == hash_api_key(issued.raw_key)
    assert not ApiKey.objects.filter(hashed_key=issued.raw_key).exists()


def test_authenticate_updates_last_used_and_revocation_disables(teams):
    issued = api_key_create(team=teams["alpha"], name="rw", scope="write")
    assert issued.api_key.last_used_at is None
    found = api_key_authenticate(issued.raw_key)
    assert found.pk == issued.api_key.pk and found.can_write
    assert ApiKey.objects.get(pk=found.pk).last_used_at is not None
    assert api_key_authenticate(issued.raw_key + "x") is None
    assert api_key_authenticate("") is None
    api_key_revoke(api_key=found)
    assert api_key_authenticate(issued.raw_key) is None


def test_only_team_admins_manage_keys(teams):
    with pytest.raises(PermissionDenied):
        api_key_create(team=teams["alpha"], name="x", created_by=teams["users"][("alpha", "engineer")])
    issued = api_key_create(team=teams["alpha"], name="x", created_by=teams["users"][("alpha", "admin")])
    with pytest.raises(PermissionDenied):
        api_key_revoke(api_key=issued.api_key, actor=teams["users"][("beta", "admin")])
