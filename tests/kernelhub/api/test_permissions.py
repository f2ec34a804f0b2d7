"""The permission matrix: two teams × (each role by session, each key scope) × every endpoint.

Reads: every principal reads its own team's rows and never another team's, in lists,
filters, details, exports and OData. Writes: exactly the roles the UI allows, and
read-only keys get 403 on every unsafe method."""

from __future__ import annotations

import io
import json

import pytest

pytestmark = pytest.mark.django_db

ROLES = ("viewer", "engineer", "reviewer", "admin")
PRINCIPALS = [("session", r) for r in ROLES] + [("key", "read"), ("key", "write")]
TEAMS = ("alpha", "beta")

LIST_URLS = ["/api/v1/teams/", "/api/v1/problems/", "/api/v1/sessions/", "/api/v1/candidates/",
             "/api/v1/reviews/", "/api/v1/kernels/", "/api/v1/evaluations/",
             "/api/v1/candidates/?status=correct&speedup_min=1&integrity=clean",
             "/api/v1/candidates/?integrity=flagged", "/api/v1/sessions/?status=finished",
             "/api/v1/reviews/?status=pending", "/api/v1/kernels/?hardware=interpreter"]
SHARED_URLS = ["/api/v1/hardware/", "/api/v1/hardware/h200/", "/api/v1/skills/",
               "/api/v1/knowledge/documents/", "/api/v1/knowledge/search?q=tiling",
               "/api/schema/"]
FLAT_SETS = ("kernels", "sessions", "candidates", "evaluations")

# Which principals may do what (mirrors ROLE_PERMISSIONS; keys act for their admin creator).
MAY = {
    "launch": {("session", "engineer"), ("session", "admin"), ("key", "write")},
    "upload": {("session", "engineer"), ("session", "admin"), ("key", "write")},
    "propose": {("session", "engineer"), ("session", "reviewer"), ("session", "admin"),
                ("key", "write")},
    "review": {("session", "reviewer"), ("session", "admin"), ("key", "write")},
}


@pytest.fixture
def principal(user_client, key_client, api_keys):
    def make(team: str, kind: str, which: str):
        if kind == "session":
            return user_client(team, which)
        return key_client(api_keys[(team, which)])
    return make


def body_of(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def team_ids_in(workspace, team) -> dict[str, set]:
    w = workspace[team]
    return {
        "sessions": {w["session"].pk}, "candidates": {c.pk for c in w["candidates"]},
        "reviews": {w["approved"].pk, w["pending"].pk}, "kernels": {w["approved"].pk},
        "evaluations": {w["evaluation"].pk}, "problems": {w["problem"].pk},
    }


@pytest.mark.parametrize("team", TEAMS)
@pytest.mark.parametrize("kind, which", PRINCIPALS)
def test_reads_are_allowed_and_never_leak_the_other_team(principal, workspace, teams,
                                                          library_problem, team, kind, which):
    client = principal(team, kind, which)
    other = "beta" if team == "alpha" else "alpha"
    mine, theirs = team_ids_in(workspace, team), team_ids_in(workspace, other)
    for url in LIST_URLS + SHARED_URLS:
        response = client.get(url)
        assert response.status_code == 200, (url, response.content[:300])
    for resource in ("sessions", "candidates", "reviews", "kernels", "evaluations", "problems"):
        rows = client.get(f"/api/v1/{resource}/?page_size=500").json()["results"]
        ids = {r["id"] for r in rows}
        assert mine[resource] <= ids and not ids & theirs[resource], resource
        for pk in theirs[resource]:  # details of the other team's objects are not found
            assert client.get(f"/api/v1/{resource}/{pk}/").status_code == 404
        for pk in mine[resource]:
            assert client.get(f"/api/v1/{resource}/{pk}/").status_code == 200
    assert library_problem.pk in {r["id"] for r in client.get("/api/v1/problems/").json()["results"]}
    teams_seen = {t["name"] for t in client.get("/api/v1/teams/").json()["results"]}
    assert teams_seen == {team}
    # filters cannot reach across teams either
    other_session = workspace[other]["session"].pk
    assert client.get(f"/api/v1/candidates/?session={other_session}").json()["results"] == []
    assert client.get(f"/api/v1/sessions/?team={teams[other].pk}").json()["results"] == []
    # downloads and trajectories of the other team's objects
    other_kernel, other_session = workspace[other]["approved"].pk, workspace[other]["session"].pk
    for url in (f"/api/v1/kernels/{other_kernel}/module/", f"/api/v1/kernels/{other_kernel}/bundle/",
                f"/api/v1/sessions/{other_session}/trajectories/"):
        assert client.get(url).status_code == 404, url
    own_kernel = workspace[team]["approved"].pk
    assert client.get(f"/api/v1/kernels/{own_kernel}/module/").status_code == 200
    # flat exports and OData
    for name in FLAT_SETS:
        for fmt in ("csv", "json"):
            response = client.get(f"/api/v1/exports/{name}.{fmt}")
            assert response.status_code == 200
            text = body_of(response).decode("utf-8-sig")
            if fmt == "json":
                assert {r["team"] for r in json.loads(text)} == {team}, name
            else:
                import csv

                rows = list(csv.DictReader(io.StringIO(text)))
                assert rows and {r["team"] for r in rows} == {team}, name
        response = client.get(f"/odata/{name}?$filter=team eq '{other}'&$count=true")
        assert response.status_code == 200 and response.json()["@odata.count"] == 0
        values = client.get(f"/odata/{name}").json()["value"]
        assert values and {r["team"] for r in values} == {team}


def _expect(kind, which, action, response, ok_status):
    allowed = (kind, which) in MAY[action]
    expected = ok_status if allowed else 403
    assert response.status_code == expected, (kind, which, action, response.content[:300])
    if kind == "key" and which == "read":
        assert "read-only" in response.json()["detail"]


@pytest.mark.parametrize("kind, which", PRINCIPALS)
def test_writes_follow_the_roles_and_key_scopes(principal, workspace, hardware, library_problem,
                                                kind, which):
    from kernelhub.review.models import Review

    client = principal("alpha", kind, which)
    alpha, beta = workspace["alpha"], workspace["beta"]
    _expect(kind, which, "launch", client.post("/api/v1/sessions/", {
        "problem": library_problem.pk, "hardware": "interpreter", "start": False}, format="json"), 201)
    _expect(kind, which, "launch", client.post(
        f"/api/v1/sessions/{alpha['session'].pk}/pause/"), 400)  # allowed, but it has finished
    _expect(kind, which, "launch", client.post("/api/v1/evaluations", {
        "problem": library_problem.pk, "candidate_source": "x = 1", "target": "no-such-gpu"},
        format="json"), 400)
    _expect(kind, which, "upload", client.post("/api/v1/problems/", {
        "name": "new", "source": "x = 1"}, format="json"), 400)  # allowed; the source is invalid
    # candidates[1] is already approved (409 for everyone allowed to propose, see
    # tests/kernelhub/review/test_review_approve_once.py); candidates[3] is correct and pending.
    _expect(kind, which, "propose", client.post("/api/v1/reviews/", {
        "candidate": alpha["candidates"][3].pk}, format="json"), 201)
    pending = alpha["pending"]
    _expect(kind, which, "review", client.post(f"/api/v1/reviews/{pending.pk}/approve/", {
        "comment": "fine", "override_reason": "checked by hand"}, format="json"), 200)
    if (kind, which) in MAY["review"]:
        assert Review.objects.get(pk=pending.pk).status == "approved"
    else:
        assert Review.objects.get(pk=pending.pk).status == "pending"
    # another team's objects cannot be changed, whatever the role: they are not found
    for url in (f"/api/v1/sessions/{beta['session'].pk}/cancel/",
                f"/api/v1/reviews/{beta['pending'].pk}/approve/",
                f"/api/v1/reviews/{beta['pending'].pk}/reject/"):
        response = client.post(url, {"comment": "x"}, format="json")
        assert response.status_code in ((403,) if which == "read" else (404,)), url
    assert Review.objects.get(pk=beta["pending"].pk).status == "pending"
    response = client.post("/api/v1/reviews/", {"candidate": beta["candidates"][1].pk}, format="json")
    assert response.status_code in ((403,) if which == "read" else (400, 403))
    response = client.post("/api/v1/sessions/", {"problem": beta["problem"].pk,
                                                 "hardware": "interpreter", "start": False},
                           format="json")
    assert response.status_code in ((403,) if which in ("read", "viewer", "reviewer") else (400,))


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_read_only_keys_get_403_on_every_unsafe_method(key_client, api_keys, workspace, method):
    client = key_client(api_keys[("alpha", "read")])
    session = workspace["alpha"]["session"].pk
    urls = ["/api/v1/sessions/", f"/api/v1/sessions/{session}/", f"/api/v1/sessions/{session}/cancel/",
            "/api/v1/problems/", "/api/v1/reviews/", "/api/v1/evaluations/", "/api/v1/teams/",
            f"/api/v1/kernels/{workspace['alpha']['approved'].pk}/", "/odata/kernels",
            "/api/v1/exports/kernels.csv"]
    for url in urls:
        response = getattr(client, method)(url, {}, format="json")
        assert response.status_code == 403, (method, url, response.status_code)


def test_anonymous_gets_401_everywhere_but_the_schema(client, workspace):
    for url in LIST_URLS + ["/api/v1/hardware/", "/api/v1/exports/kernels.csv", "/odata/kernels"]:
        assert client.get(url).status_code == 401, url
    assert client.post("/api/v1/evaluations", {}).status_code == 401
    assert client.get("/api/schema/").status_code == 200
    assert client.get("/api/docs/").status_code == 200


def test_a_user_without_a_team_sees_nothing(client, django_user_model, workspace):
    loner = django_user_model.objects.create_user(username="loner", password="pw")
    client.force_login(loner)
    response = client.get("/api/v1/sessions/")
    assert response.status_code == 403 and "not a member" in response.json()["detail"]


def test_key_of_a_removed_creator_cannot_write(key_client, api_keys, workspace, teams,
                                               library_problem):
    admin = teams["users"][("alpha", "admin")]
    admin.is_active = False
    admin.save()
    response = key_client(api_keys[("alpha", "write")]).post(
        "/api/v1/sessions/", {"problem": library_problem.pk, "hardware": "interpreter",
                              "start": False}, format="json")
    assert response.status_code == 403 and "creator" in response.json()["detail"]


def _knowledge_rows(teams) -> dict:
    """A document and a skill of each team, plus beta's shared ones (rows only: the
    Chroma-backed matrix is tests/knowledge/test_kb_teams.py)."""
    from knowledge.models import Document, Skill

    rows = {}
    for name, shared in (("alpha", False), ("beta", False), ("beta-shared", True)):
        owner = teams[name.split("-")[0]]
        rows[("document", name)] = Document.objects.create(
            title=f"{name} manual", filename=f"{name}.md", kind="markdown", category="general-optimization",
            content_hash=f"hash-{name}", size_bytes=1, stored_path="", status="ready",
            team=owner, shared=shared)
        rows[("skill", name)] = Skill.objects.create(title=f"{name} skill", transformation="tile",
                                                     team=owner, shared=shared)
    return rows


@pytest.mark.parametrize("team", TEAMS)
@pytest.mark.parametrize("kind, which", PRINCIPALS)
def test_knowledge_rows_never_leak_and_cannot_be_deleted_across_teams(principal, teams, team,
                                                                      kind, which):
    from knowledge.models import Document

    client = principal(team, kind, which)
    rows = _knowledge_rows(teams)
    other = "beta" if team == "alpha" else "alpha"
    for what, url in (("document", "/api/v1/knowledge/documents/"), ("skill", "/api/v1/skills/")):
        ids = {r["id"] for r in client.get(url + "?page_size=500").json()["results"]}
        mine = {rows[(what, team)].pk, rows[(what, "beta-shared")].pk}
        assert ids == mine, what
        assert client.get(f"{url}{rows[(what, other)].pk}/").status_code == 404
        for pk in mine:
            assert client.get(f"{url}{pk}/").status_code == 200
    foreign = rows[("document", other)]
    response = client.delete(f"/api/v1/knowledge/documents/{foreign.pk}/")
    assert response.status_code == (403 if which == "read" else 404)
    assert Document.objects.filter(pk=foreign.pk).exists()
    if team == "alpha":  # beta's shared manual: everyone reads it, only beta deletes it
        shared = rows[("document", "beta-shared")]
        assert client.delete(f"/api/v1/knowledge/documents/{shared.pk}/").status_code == 403
        assert Document.objects.filter(pk=shared.pk).exists()
