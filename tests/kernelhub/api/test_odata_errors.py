"""Bad OData options answer 400 with an OData JSON error, never a 500 or an HTML page."""

from __future__ import annotations

from urllib.parse import quote

import pytest

pytestmark = pytest.mark.django_db

BAD = [
    ("$skip", "99999999999999999999999", "at most"),
    ("$top", "99999999999999999999999", "at most"),
    ("$skip", "9" * 5000, "at most"),
    ("$skip", "-1", "non-negative integer"),
    ("$top", "-5", "non-negative integer"),
    ("$top", "abc", "non-negative integer"),
    ("$top", "1e3", "non-negative integer"),
    ("$skip", "²", "non-negative integer"),
    ("$filter", "id eq 99999999999999999999999", "out of range"),
    ("$filter", "candidate_id lt -99999999999999999999999", "out of range"),
    ("$filter", "reward gt 1e999", "out of range"),
    ("$filter", "proposed_at gt 0001-01-01T00:00:00+01:00", "range of dates"),
    ("$filter", "approved_at lt 9999-12-31T23:59:59-14:00", "range of dates"),
    ("$filter", "id eq", "ends too early"),
    ("$filter", "team eq 'x", "unterminated string"),
    ("$filter", "nope eq 1", "not a property"),
    ("$orderby", "nope", "not a property"),
    ("$orderby", "id sideways", "cannot read"),
    ("$orderby", "id desc desc", "cannot read"),
]


def assert_odata_400(response, fragment):
    assert response.status_code == 400, response.content[:500]
    assert response["Content-Type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == "BadRequest" and fragment in error["message"], error


@pytest.mark.parametrize("name,value,fragment", BAD)
def test_bad_options_get_an_odata_400(key_client, api_keys, workspace, name, value, fragment):
    client = key_client(api_keys[("alpha", "read")])
    for entity in ("kernels", "candidates"):
        if entity == "candidates" and name == "$filter" and "_at " in value:
            value = value.replace("proposed_at", "created_at").replace("approved_at",
                                                                       "evaluated_at")
        if entity == "candidates" and "candidate_id" in value:
            value = value.replace("candidate_id", "session_id")
        response = client.get(f"/odata/{entity}?{name}={quote(value)}")
        assert_odata_400(response, fragment)


@pytest.mark.parametrize("name,value,fragment", [b for b in BAD if b[0] != "$skip"
                                                 and b[0] != "$top"])
def test_exports_refuse_the_same_with_400(key_client, api_keys, workspace, name, value,
                                           fragment):
    client = key_client(api_keys[("alpha", "read")])
    response = client.get(f"/api/v1/exports/kernels.csv?{name}={quote(value)}")
    assert response.status_code == 400 and fragment in response.json()["detail"]


def test_largest_allowed_skip_and_top_still_answer(key_client, api_keys, workspace):
    client = key_client(api_keys[("alpha", "read")])
    for query in ("$skip=9007199254740991", "$top=9007199254740991",
                  "$orderby=reward desc&$skip=9007199254740991", "$top=0"):
        response = client.get(f"/odata/kernels?{query}")
        assert response.status_code == 200, (query, response.content[:300])
    assert client.get("/odata/kernels?$skip=9007199254740991").json()["value"] == []
    assert client.get("/odata/kernels?$filter=id lt 9223372036854775807").status_code == 200


def test_huge_prefer_page_size_is_ignored_not_a_crash(key_client, api_keys, workspace):
    client = key_client(api_keys[("alpha", "read")])
    response = client.get("/odata/kernels", HTTP_PREFER="odata.maxpagesize=" + "9" * 6000)
    assert response.status_code == 200


def test_unexpected_failure_is_an_odata_500_not_a_page(key_client, api_keys, workspace,
                                                        monkeypatch):
    from kernelhub.api.odata import views

    def boom(*args, **kwargs):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(views, "read_options", boom)
    client = key_client(api_keys[("alpha", "read")])
    client.raise_request_exception = False
    response = client.get("/odata/kernels")
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "InternalServerError"
    assert "kaboom" not in response.content.decode() and b"Traceback" not in response.content
