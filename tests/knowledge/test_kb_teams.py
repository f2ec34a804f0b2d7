"""Teams are a boundary in the knowledge base: the permission matrix for documents, skills,
search and session retrieval, over pages, the API and Chroma itself (embedded and server).

Every document below shares the same words ("tiling strategy for the glorp kernel"), so a
query would return all of them if scoping broke; each also holds a secret word only its
owner may ever see. Shared rows (an admin's choice) are visible to every team; rows no
team owns are visible to staff only."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.exceptions import PermissionDenied
from django.urls import reverse
from rest_framework.test import APIClient

from kernelhub.review.models import AuditEvent
from knowledge import store
from knowledge.context import KnowledgeContextProvider
from knowledge.embeddings import embed_query
from knowledge.models import Document, Skill
from knowledge.selectors import KnowledgeScope, and_where
from knowledge.services import (
    distill_session_skills,
    document_delete,
    document_set_shared,
    document_upload,
    documents_reindex,
    skill_set_shared,
)

ROLES = ("viewer", "engineer", "reviewer", "admin")
PRINCIPALS = [("session", r) for r in ROLES] + [("key", "read"), ("key", "write")]
WRITERS = {("session", "engineer"), ("session", "admin"), ("key", "write")}
# Every document's words and every secret: both rankings (BM25 and vectors) would find them all.
QUESTION = "tiling strategy for the glorp kernel: quibblefrost zanzibarite sharedium oldenword"


def page(title: str, secret: str) -> bytes:
    return (f"# {title}\n\nThe tiling strategy for the glorp kernel on this GPU: {secret} "
            f"tiles of 128 rows; the glorp kernel keeps its tiling strategy in {secret} "
            "shared memory.\n").encode()


def lesson(transformation: str, session: str) -> list[dict]:
    root = {"id": 0, "parent_id": None, "status": "correct", "diagnostics": {"bottleneck": "memory"},
            "family": "glorp", "hardware": "h100", "session": session}
    step = {"id": 1, "parent_id": 0, "status": "correct", "advantage": 0.5, "speedup_vs_eager": 1.7,
            "origin": {"transformation": transformation, "params": {"BLOCK": 128}},
            "diagnostics": {"bottleneck": "compute"}, "integrity_flags": [], "family": "glorp",
            "hardware": "h100", "session": session}
    return [root, step]


@pytest.fixture
def world(kb, ingest, teams):
    """Each team's document and skill, a shared document and skill of beta's, and a
    legacy document no team owns."""
    alpha, beta = teams["alpha"], teams["beta"]
    docs = {
        "alpha": ingest("alpha.md", page("Alpha tiling", "quibblefrost"), hardware="h100", team=alpha),
        "beta": ingest("beta.md", page("Beta tiling", "zanzibarite"), hardware="h100", team=beta),
        "shared": ingest("shared.md", page("Shared tiling", "sharedium"), hardware="h100",
                         team=beta, shared=True),
        "legacy": ingest("legacy.md", page("Legacy tiling", "oldenword"), hardware="h100"),
    }
    assert all(d.status == Document.Status.READY for d in docs.values())
    fillers = {"alpha": set(), "beta": set()}
    for i, topic in enumerate(("warp shuffles", "register spills", "atomic adds", "bank conflicts",
                               "launch bounds", "async copies")):  # so BM25 has a vocabulary
        owner = "alpha" if i % 2 else "beta"
        fillers[owner].add(ingest(f"filler-{i}.md", f"# Filler {i}\n\nNotes on {topic} for "
                                  f"kernel number {i}.\n".encode(), team=teams[owner]).pk)
    skills = {
        "alpha": distill_session_skills(lesson("glorp tiling by quibblefrost rows", "a1"), team=alpha)[0],
        "beta": distill_session_skills(lesson("glorp tiling by zanzibarite rows", "b1"), team=beta)[0],
        "shared": distill_session_skills(lesson("persistent grid with sharedium swizzle", "b2"),
                                         team=beta)[0],
    }
    assert len({s.pk for s in skills.values()}) == 3  # beta's two lessons did not merge
    skill_set_shared(skill=skills["shared"], shared=True, user=teams["users"][("beta", "admin")])
    return {"docs": docs, "skills": skills, "teams": teams, "fillers": fillers}


def readable(world, team: str) -> tuple[set[int], set[int]]:
    """(document ids, skill ids) team `team` may read."""
    d, s = world["docs"], world["skills"]
    return {d[team].pk, d["shared"].pk, *world["fillers"][team]}, {s[team].pk, s["shared"].pk}


def hidden(world, team: str) -> tuple[set[int], set[int]]:
    other = "beta" if team == "alpha" else "alpha"
    d, s = world["docs"], world["skills"]
    docs = {d[other].pk, d["legacy"].pk, *world["fillers"][other]}
    return docs, {s[other].pk}


SECRETS = {"alpha": "quibblefrost", "beta": "zanzibarite", "shared": "sharedium", "legacy": "oldenword"}


@pytest.fixture
def principal(teams):
    from kernelhub.teams.services import api_key_create

    def make(team: str, kind: str, which: str) -> APIClient:
        client = APIClient()
        if kind == "session":
            client.force_login(teams["users"][(team, which)])
        else:
            issued = api_key_create(team=teams[team], name=f"{team}-{which}", scope=which,
                                    created_by=teams["users"][(team, "admin")])
            client.credentials(HTTP_AUTHORIZATION=f"Api-Key {issued.raw_key}")
        return client
    return make


@pytest.fixture(autouse=True)
def _fresh_throttle_counters():
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


# --- reads -----------------------------------------------------------------------------------

@pytest.mark.parametrize("team", ("alpha", "beta"))
@pytest.mark.parametrize("kind, which", PRINCIPALS)
def test_reads_never_show_another_teams_rows(world, principal, team, kind, which):
    client = principal(team, kind, which)
    my_docs, my_skills = readable(world, team)
    their_docs, their_skills = hidden(world, team)
    other = "beta" if team == "alpha" else "alpha"
    allowed_secrets = {SECRETS[team], SECRETS["shared"]}
    forbidden_secrets = {SECRETS[other], SECRETS["legacy"]}

    # REST: lists, details, search
    listed = {d["id"] for d in client.get("/api/v1/knowledge/documents/?page_size=500").json()["results"]}
    assert my_docs <= listed and not listed & their_docs
    for pk in their_docs:
        assert client.get(f"/api/v1/knowledge/documents/{pk}/").status_code == 404
    for pk in my_docs:
        assert client.get(f"/api/v1/knowledge/documents/{pk}/").status_code == 200
    shared = client.get(f"/api/v1/knowledge/documents/{world['docs']['shared'].pk}/").json()
    assert shared["shared"] is True and shared["team"] == world["teams"]["beta"].pk
    hits = client.get("/api/v1/knowledge/search", {"q": QUESTION, "k": 50}).json()
    found_ids = {h["document_id"] for h in hits}
    assert found_ids <= my_docs and {world["docs"][team].pk, world["docs"]["shared"].pk} <= found_ids
    assert not any(word in h["text"] for h in hits for word in forbidden_secrets)
    skills = {s["id"] for s in client.get("/api/v1/skills/?page_size=500").json()["results"]}
    assert skills == my_skills
    for pk in their_skills:
        assert client.get(f"/api/v1/skills/{pk}/").status_code == 404
    for pk in my_skills:
        assert client.get(f"/api/v1/skills/{pk}/").status_code == 200
    assert {s["id"] for s in client.get("/api/v1/skills/?q=glorp").json()["results"]} == my_skills

    if kind != "session":
        return
    # Pages: list, detail, progress, search, skills (by words and by meaning)
    listing = client.get(reverse("knowledge:document_list")).content.decode()
    assert "Alpha tiling" in listing if team == "alpha" else "Beta tiling" in listing
    assert "Shared tiling" in listing
    assert ("Beta tiling" if team == "alpha" else "Alpha tiling") not in listing
    assert "Legacy tiling" not in listing
    for pk in their_docs:
        for name in ("document_detail", "document_progress"):
            assert client.get(reverse(f"knowledge:{name}", args=[pk])).status_code == 404
    for pk in my_docs:
        assert client.get(reverse("knowledge:document_detail", args=[pk])).status_code == 200
    found = client.get(reverse("knowledge:search"), {"q": QUESTION, "k": 50}).content.decode()
    found = found.replace(QUESTION, "")  # the page repeats the question; look at the answers
    assert all(word in found for word in allowed_secrets)
    assert not any(word in found for word in forbidden_secrets)
    for params in ({"q": "glorp"}, {"q": "glorp tiling rows", "mode": "meaning"}, {"retired": "1"}):
        text = client.get(reverse("knowledge:skill_list"), params).content.decode()
        assert SECRETS[team] in text and SECRETS["shared"] in text, params
        assert SECRETS[other] not in text, params
    for pk in their_skills:
        assert client.get(reverse("knowledge:skill_detail", args=[pk])).status_code == 404
    for pk in my_skills:
        assert client.get(reverse("knowledge:skill_detail", args=[pk])).status_code == 200


@pytest.mark.parametrize("team", ("alpha", "beta"))
def test_session_context_holds_only_the_teams_and_shared_rows(world, teams, team):
    my_docs, my_skills = readable(world, team)
    provider = KnowledgeContextProvider(skills=10, team_id=teams[team].pk)
    passages = provider.retrieve(QUESTION + " glorp tiling rows", hardware="h100", k=50)
    documents = {p.metadata["document_id"] for p in passages if p.kind == "document"}
    skills = {p.metadata["skill_id"] for p in passages if p.kind == "skill"}
    assert documents <= my_docs and skills == my_skills
    assert {world["docs"][team].pk, world["docs"]["shared"].pk} <= documents
    node = provider.retrieve_for_node(problem=QUESTION, diagnosis={"bottleneck": "memory"},
                                      hardware="h100", k=50)
    assert {p.metadata["document_id"] for p in node if p.kind == "document"} <= my_docs
    # No team: shared rows only. Staff (unassigned=True) see legacy rows, never other teams'.
    nobody = KnowledgeContextProvider(skills=10).retrieve(QUESTION, hardware="h100", k=50)
    assert {p.metadata.get("document_id") for p in nobody if p.kind == "document"} == {
        world["docs"]["shared"].pk}


def chunk_ids(document) -> set[str]:
    return {str(pk) for pk in document.chunks.values_list("pk", flat=True)}


def forget_stale_vectors(where: dict, keep: set[str]) -> None:
    """Drop vectors an earlier test left under these document ids: SQLite gives a rolled-back
    test's row ids out again, so a big document of another test can carry our document's id
    (and our team's) and crowd our chunks out of the top 100."""
    held = store.collection(store.CHUNKS).get(where=where, include=[])["ids"]
    store.delete(store.CHUNKS, ids=[id_ for id_ in held if id_ not in keep])


def assert_chroma_filters_by_team(world, teams) -> None:
    """The `where` filter itself: the nearest vectors to beta's own text, asked as alpha,
    never include beta's chunks; the metadata carries team_id and shared."""
    docs = world["docs"]
    vector = embed_query("zanzibarite tiles of 128 rows; Beta tiling")
    alpha_scope = KnowledgeScope.for_teams([teams["alpha"].pk])
    # only this test's documents: other tests of the run leave chunks (with team ids that a
    # later test's teams may reuse) in the same store, which would crowd the top 100
    ours = {"document_id": {"$in": [d.pk for d in docs.values()]}}
    forget_stale_vectors(ours, set().union(*(chunk_ids(d) for d in docs.values())))
    hits = {id_ for id_, _ in store.query(store.CHUNKS, vector, 100,
                                          where=and_where(alpha_scope.chroma_where(), ours))}
    assert hits >= chunk_ids(docs["alpha"]) | chunk_ids(docs["shared"])
    assert not hits & (chunk_ids(docs["beta"]) | chunk_ids(docs["legacy"]))
    unfiltered = {id_ for id_, _ in store.query(store.CHUNKS, vector, 100, where=ours)}
    assert unfiltered & chunk_ids(docs["beta"])  # without the team filter beta's text is nearest
    staff = KnowledgeScope.for_teams([teams["alpha"].pk], unassigned=True)
    staff_hits = {id_ for id_, _ in store.query(store.CHUNKS, vector, 100,
                                                where=and_where(staff.chroma_where(), ours))}
    assert chunk_ids(docs["legacy"]) <= staff_hits and not staff_hits & chunk_ids(docs["beta"])
    meta = store.collection(store.CHUNKS).get(ids=sorted(chunk_ids(docs["shared"])),
                                              include=["metadatas"])["metadatas"]
    assert {(m["team_id"], m["shared"]) for m in meta} == {(teams["beta"].pk, True)}
    skills = world["skills"]
    our_skills = {"skill_id": {"$in": [s.pk for s in skills.values()]}}
    skill_hits = {id_ for id_, _ in store.query(store.SKILLS, vector, 50,
                                                where=and_where(alpha_scope.chroma_where(), our_skills))}
    assert f"skill-{skills['alpha'].pk}" in skill_hits and f"skill-{skills['beta'].pk}" not in skill_hits


def test_chroma_where_filter_embedded(world, teams, settings):
    settings.CHROMA_URL = ""
    assert store.get_client().get_settings().is_persistent  # the embedded PersistentClient
    assert_chroma_filters_by_team(world, teams)


def test_chroma_where_filter_on_a_chroma_server(kb, ingest, teams, settings, chroma_server):
    settings.CHROMA_URL = chroma_server
    assert type(store.get_client()).__name__ != "PersistentClient"
    docs = {
        "alpha": ingest("s-alpha.md", page("Alpha tiling", "quibblefrost"), team=teams["alpha"]),
        "beta": ingest("s-beta.md", page("Beta tiling", "zanzibarite"), team=teams["beta"]),
        "shared": ingest("s-shared.md", page("Shared tiling", "sharedium"), team=teams["beta"],
                         shared=True),
        "legacy": ingest("s-legacy.md", page("Legacy tiling", "oldenword")),
    }
    skills = {
        "alpha": distill_session_skills(lesson("glorp tiling by quibblefrost rows", "a1"), team=teams["alpha"])[0],
        "beta": distill_session_skills(lesson("glorp tiling by zanzibarite rows", "b1"), team=teams["beta"])[0],
    }
    try:
        assert_chroma_filters_by_team({"docs": docs, "skills": skills}, teams)
        provider = KnowledgeContextProvider(skills=5, team_id=teams["alpha"].pk)
        got = {p.metadata.get("document_id") for p in provider.retrieve(QUESTION, k=50)
               if p.kind == "document"}
        assert got == {docs["alpha"].pk, docs["shared"].pk}
    finally:
        for document in docs.values():
            document_delete(document)
        store.delete(store.SKILLS, ids=[f"skill-{s.pk}" for s in skills.values()])


def test_staff_see_rows_no_team_owns_and_nothing_of_other_teams(world, client, teams):
    staff = teams["users"][("alpha", "viewer")]
    staff.is_staff = True
    staff.save()
    client.force_login(staff)
    listing = client.get(reverse("knowledge:document_list")).content.decode()
    assert "Legacy tiling" in listing and "Beta tiling" not in listing
    legacy = world["docs"]["legacy"]
    detail = client.get(reverse("knowledge:document_detail", args=[legacy.pk])).content.decode()
    assert "staff only" in detail
    assert client.get(reverse("knowledge:document_detail",
                              args=[world["docs"]["beta"].pk])).status_code == 404


# --- writes ----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind, which", PRINCIPALS)
def test_writes_follow_roles_and_never_cross_teams(world, principal, teams, kind, which):
    client = principal("alpha", kind, which)
    docs, skills = world["docs"], world["skills"]
    may_write = (kind, which) in WRITERS
    read_key = (kind, which) == ("key", "read")

    # Another team's document: not found, whatever the role; it stays, nothing is audited.
    response = client.delete(f"/api/v1/knowledge/documents/{docs['beta'].pk}/")
    assert response.status_code == (403 if read_key else 404)
    # A shared document of another team: readable, never deletable by this team.
    response = client.delete(f"/api/v1/knowledge/documents/{docs['shared'].pk}/")
    assert response.status_code == 403
    if kind == "session":
        for doc in ("beta", "legacy"):
            assert client.post(reverse("knowledge:document_delete", args=[docs[doc].pk])).status_code == 404
        assert client.post(reverse("knowledge:document_delete",
                                   args=[docs["shared"].pk])).status_code == 403
        for name in ("skill_retire", "skill_share", "skill_detail"):
            url = reverse(f"knowledge:{name}", args=[skills["beta"].pk])
            assert client.post(url, {"title": "taken over"}).status_code == 404, name
        assert client.post(reverse("knowledge:document_share",
                                   args=[docs["beta"].pk])).status_code == 404
        assert client.post(reverse("knowledge:skill_retire",
                                   args=[skills["shared"].pk])).status_code == 403
    assert Document.objects.filter(pk__in=[docs["beta"].pk, docs["shared"].pk,
                                           docs["legacy"].pk]).count() == 3
    beta_skill = Skill.objects.get(pk=skills["beta"].pk)
    assert beta_skill.title != "taken over" and not beta_skill.retired
    assert not Skill.objects.get(pk=skills["shared"].pk).retired
    assert not AuditEvent.objects.filter(action="document_deleted").exists()
    assert store.count(store.CHUNKS, where={"document_id": docs["beta"].pk}) > 0

    # The team's own document: engineers and admins (and write keys) delete it, audited.
    own = docs["alpha"]
    response = client.delete(f"/api/v1/knowledge/documents/{own.pk}/")
    assert response.status_code == (204 if may_write else 403), response.content[:300]
    assert Document.objects.filter(pk=own.pk).exists() is not may_write
    events = AuditEvent.objects.filter(action="document_deleted", target_type="document",
                                       target_id=str(own.pk))
    if may_write:
        event = events.get()
        assert event.team == teams["alpha"] and event.details["filename"] == "alpha.md"
        assert event.actor == teams["users"][("alpha", "admin" if kind == "key" else which)]
        assert store.count(store.CHUNKS, where={"document_id": own.pk}) == 0
    else:
        assert not events.exists()


@pytest.mark.parametrize("role", ROLES)
def test_html_delete_of_own_document_is_role_checked_and_audited(world, client, teams, role):
    user = teams["users"][("alpha", role)]
    client.force_login(user)
    own = world["docs"]["alpha"]
    response = client.post(reverse("knowledge:document_delete", args=[own.pk]))
    if role in ("engineer", "admin"):
        assert response.status_code == 302
        assert not Document.objects.filter(pk=own.pk).exists()
        event = AuditEvent.objects.get(action="document_deleted", target_id=str(own.pk))
        assert event.actor == user and event.team == teams["alpha"]
    else:
        assert response.status_code == 403
        assert Document.objects.filter(pk=own.pk).exists()
        assert not AuditEvent.objects.filter(action="document_deleted").exists()


def test_only_admins_share(world, client, teams, django_capture_on_commit_callbacks):
    alpha_doc, alpha_skill = world["docs"]["alpha"], world["skills"]["alpha"]
    engineer, admin = teams["users"][("alpha", "engineer")], teams["users"][("alpha", "admin")]
    beta_viewer = teams["users"][("beta", "viewer")]
    for user in (engineer, teams["users"][("alpha", "viewer")], teams["users"][("beta", "admin")]):
        with pytest.raises(PermissionDenied):
            document_set_shared(document=alpha_doc, shared=True, user=user)
        with pytest.raises(PermissionDenied):
            skill_set_shared(skill=alpha_skill, shared=True, user=user)
    with pytest.raises(PermissionDenied):  # an upload cannot be shared by an engineer either
        document_upload(filename="eng.md", data=page("Engineer", "x"), category="general-optimization",
                        user=engineer, team=teams["alpha"], shared=True)
    assert not Document.objects.filter(filename="eng.md").exists()
    client.force_login(engineer)
    url = reverse("knowledge:document_share", args=[alpha_doc.pk])
    assert client.post(url, {"shared": "1"}).status_code == 403
    assert not Document.objects.get(pk=alpha_doc.pk).shared
    assert "kb-share" not in client.get(reverse("knowledge:document_detail", args=[alpha_doc.pk])).content.decode()

    # Beta cannot see alpha's document until alpha's admin shares it.
    beta = KnowledgeContextProvider(skills=5, team_id=teams["beta"].pk)
    assert alpha_doc.pk not in {p.metadata.get("document_id") for p in beta.retrieve(QUESTION, k=50)}
    beta_where = KnowledgeScope.for_teams([teams["beta"].pk]).chroma_where()
    # only this test's documents, as in assert_chroma_filters_by_team; and the filter itself
    # (a metadata `get`), not a nearest-neighbour query: in a run-wide store whose row ids
    # SQLite hands out again, the approximate search once returned beta's two chunks and
    # not alpha's, with alpha's metadata already shared (the retrieval below found it)
    ours = {"document_id": {"$in": [d.pk for d in world["docs"].values()]}}

    def visible_to_beta() -> set[str]:
        return set(store.collection(store.CHUNKS).get(where=and_where(beta_where, ours),
                                                      include=[])["ids"])

    assert not chunk_ids(alpha_doc) & visible_to_beta()
    client.force_login(admin)
    assert client.post(url, {"shared": "1"}).status_code == 302
    assert Document.objects.get(pk=alpha_doc.pk).shared
    assert AuditEvent.objects.filter(action="document_shared", target_id=str(alpha_doc.pk),
                                     actor=admin).exists()
    assert client.post(reverse("knowledge:skill_share", args=[alpha_skill.pk]), {"shared": "1"}).status_code == 302
    passages = beta.retrieve(QUESTION + " glorp tiling rows", k=50)
    assert alpha_doc.pk in {p.metadata.get("document_id") for p in passages if p.kind == "document"}
    assert alpha_skill.pk in {p.metadata.get("skill_id") for p in passages if p.kind == "skill"}
    assert chunk_ids(alpha_doc) <= visible_to_beta()
    client.force_login(beta_viewer)
    assert client.get(reverse("knowledge:document_detail", args=[alpha_doc.pk])).status_code == 200

    # An engineer's upload form does not offer sharing; an admin's does.
    from django.core.files.uploadedfile import SimpleUploadedFile

    for user, name in ((engineer, "by-engineer.md"), (admin, "by-admin.md")):
        client.force_login(user)
        with django_capture_on_commit_callbacks(execute=False):
            response = client.post(reverse("knowledge:document_upload"), {
                "file": SimpleUploadedFile(name, page(name, name)), "category": "general-optimization",
                "team": str(teams["alpha"].pk), "shared": "on"})
        assert response.status_code == 302, response.content[:500]
    assert not Document.objects.get(filename="by-engineer.md").shared
    assert Document.objects.get(filename="by-admin.md").shared


def test_upload_only_to_own_teams_and_duplicates_stay_within_a_team(world, client, teams,
                                                                    django_capture_on_commit_callbacks):
    from django.core.files.uploadedfile import SimpleUploadedFile

    engineer = teams["users"][("alpha", "engineer")]
    client.force_login(engineer)
    response = client.post(reverse("knowledge:document_upload"), {
        "file": SimpleUploadedFile("sneaky.md", b"# x\n\nsneaky\n"), "category": "general-optimization",
        "team": str(teams["beta"].pk)})
    assert response.status_code == 400 and not Document.objects.filter(filename="sneaky.md").exists()
    with pytest.raises(PermissionDenied):
        document_upload(filename="sneaky.md", data=b"# x\n\nsneaky\n", category="general-optimization",
                        user=engineer, team=teams["beta"])
    assert not Document.objects.filter(filename="sneaky.md").exists()
    # Beta's manual uploaded again by alpha: allowed, and nothing about beta's copy is told.
    with django_capture_on_commit_callbacks(execute=False):
        copy = document_upload(filename="beta-copy.md", data=page("Beta tiling", "zanzibarite"),
                               category="general-optimization", user=engineer, team=teams["alpha"])
    assert copy.team == teams["alpha"]
    from knowledge.errors import KnowledgeInputError

    with pytest.raises(KnowledgeInputError, match="duplicate"):  # the same team twice: refused
        document_upload(filename="again.md", data=page("Beta tiling", "zanzibarite"),
                        category="general-optimization", user=engineer, team=teams["alpha"])


def test_skills_belong_to_the_sessions_team_and_never_merge_across(kb, teams, hardware,
                                                                     library_problem):
    from kernelhub.optimization.models import SearchSession

    sessions = {name: SearchSession.objects.create(
        team=teams[name], problem=library_problem, hardware=hardware["interpreter"],
        created_by=teams["users"][(name, "engineer")], status="finished", budget_evaluations=4)
        for name in ("alpha", "beta")}
    a = distill_session_skills(lesson("split_k", str(sessions["alpha"].pk)),
                               session_id=sessions["alpha"].pk)[0]
    b = distill_session_skills(lesson("split_k", str(sessions["beta"].pk)),
                               session_id=sessions["beta"].pk)[0]
    assert a.team == teams["alpha"] and b.team == teams["beta"] and a.pk != b.pk
    assert a.observations == b.observations == 1
    again = distill_session_skills(lesson("split_k", "x"), team=teams["alpha"])[0]
    assert again.pk == a.pk and Skill.objects.get(pk=a.pk).observations == 2
    meta = store.collection(store.SKILLS).get(ids=[f"skill-{a.pk}", f"skill-{b.pk}"],
                                              include=["metadatas"])
    by_id = dict(zip(meta["ids"], meta["metadatas"]))
    assert by_id[f"skill-{a.pk}"]["team_id"] == teams["alpha"].pk
    assert by_id[f"skill-{b.pk}"]["team_id"] == teams["beta"].pk
    assert by_id[f"skill-{a.pk}"]["shared"] is False


def test_reindex_writes_team_metadata_and_checks_the_role(world, teams):
    alpha_doc = world["docs"]["alpha"]
    beta_engineer = teams["users"][("beta", "engineer")]
    with pytest.raises(PermissionDenied):
        documents_reindex(document_ids=[alpha_doc.pk], user=beta_engineer)
    with pytest.raises(PermissionDenied):
        documents_reindex(user=teams["users"][("alpha", "admin")])  # the whole store: superusers
    assert Document.objects.get(pk=alpha_doc.pk).status == Document.Status.READY
    documents, _ = documents_reindex(document_ids=[alpha_doc.pk],
                                     user=teams["users"][("alpha", "engineer")])
    assert documents == 1
    alpha_doc.refresh_from_db()
    meta = store.collection(store.CHUNKS).get(ids=sorted(chunk_ids(alpha_doc)), include=["metadatas"])
    assert {(m["team_id"], m["shared"]) for m in meta["metadatas"]} == {(teams["alpha"].pk, False)}


def test_role_changes_are_audited_and_need_an_admin(teams):
    from kernelhub.teams.models import Membership
    from kernelhub.teams.services import membership_remove, membership_set

    viewer, admin = teams["users"][("alpha", "viewer")], teams["users"][("alpha", "admin")]
    with pytest.raises(PermissionDenied):
        membership_set(team=teams["alpha"], user=viewer, role="admin",
                       actor=teams["users"][("alpha", "engineer")])
    with pytest.raises(PermissionDenied):  # beta's admin is nobody in alpha
        membership_set(team=teams["alpha"], user=viewer, role="admin",
                       actor=teams["users"][("beta", "admin")])
    assert Membership.objects.get(team=teams["alpha"], user=viewer).role == "viewer"
    membership_set(team=teams["alpha"], user=viewer, role="engineer", actor=admin)
    event = AuditEvent.objects.filter(action="membership_role_changed", actor=admin).get()
    assert event.team == teams["alpha"]
    assert (event.details["old_role"], event.details["new_role"]) == ("viewer", "engineer")
    membership_remove(membership=Membership.objects.get(team=teams["alpha"], user=viewer), actor=admin)
    assert AuditEvent.objects.filter(action="membership_removed", actor=admin).exists()


def test_delete_of_a_pending_document_is_refused_and_loses_nothing(kb, client, teams,
                                                                   django_capture_on_commit_callbacks):
    engineer = teams["users"][("alpha", "engineer")]
    with django_capture_on_commit_callbacks(execute=False):
        pending = document_upload(filename="pending.md", data=page("Pending", "waitium"),
                                  category="general-optimization", user=engineer, team=teams["alpha"])
    api = APIClient()
    api.force_login(engineer)
    response = api.delete(f"/api/v1/knowledge/documents/{pending.pk}/")
    assert response.status_code == 400 and "Wait until indexing finishes" in response.json()["detail"]
    client.force_login(engineer)
    assert client.post(reverse("knowledge:document_delete", args=[pending.pk])).status_code == 302
    assert Document.objects.filter(pk=pending.pk).exists()
    assert not AuditEvent.objects.filter(action="document_deleted").exists()


def test_migration_gives_old_skills_their_sessions_team_or_none(kb, teams, hardware,
                                                                library_problem):
    import importlib

    from django.apps import apps

    from kernelhub.optimization.models import SearchSession

    migration = importlib.import_module("knowledge.migrations.0002_team_scoping")
    sessions = {name: SearchSession.objects.create(
        team=teams[name], problem=library_problem, hardware=hardware["interpreter"],
        status="finished", budget_evaluations=1) for name in ("alpha", "beta")}
    one = Skill.objects.create(title="one", transformation="t",
                               sessions=[str(sessions["alpha"].pk), sessions["alpha"].pk])
    mixed = Skill.objects.create(title="mixed", transformation="t",
                                 sessions=[sessions["alpha"].pk, sessions["beta"].pk])
    unknown = Skill.objects.create(title="unknown", transformation="t",
                                   sessions=[sessions["beta"].pk, "s-gone"])
    migration.skills_take_their_sessions_team(apps, None)
    assert Skill.objects.get(pk=one.pk).team == teams["alpha"]
    assert Skill.objects.get(pk=mixed.pk).team is None  # merged across teams: staff decide
    assert Skill.objects.get(pk=unknown.pk).team is None


def test_commands_take_a_team(kb, teams, tmp_path, capsys):
    import json

    from django.core.management import CommandError, call_command

    (tmp_path / "a.md").write_bytes(page("Alpha tiling", "quibblefrost"))
    (tmp_path / "b.md").write_bytes(page("Beta tiling", "zanzibarite"))
    call_command("kb_ingest", str(tmp_path / "a.md"), "--team", "alpha")
    call_command("kb_ingest", str(tmp_path / "b.md"), "--team", "beta", "--shared")
    a, b = Document.objects.get(filename="a.md"), Document.objects.get(filename="b.md")
    assert (a.team, a.shared, b.team, b.shared) == (teams["alpha"], False, teams["beta"], True)
    with pytest.raises(CommandError, match="no team has that slug"):
        call_command("kb_ingest", str(tmp_path / "a.md"), "--team", "gamma")
    capsys.readouterr()
    call_command("kb_search", QUESTION, "--k", "50", "--json", "--team", "beta")
    found = {r["filename"] for r in json.loads(capsys.readouterr().out.strip().splitlines()[-1])}
    assert found == {"b.md"}  # beta's own; alpha's private page is not beta's to read
    call_command("kb_search", QUESTION, "--k", "50", "--json", "--team", "alpha")
    found = {r["filename"] for r in json.loads(capsys.readouterr().out.strip().splitlines()[-1])}
    assert found == {"a.md", "b.md"}  # alpha's own and beta's shared one


def test_the_runner_scopes_a_sessions_context_and_skills_to_its_team(kb, teams, hardware,
                                                                     library_problem):
    from types import SimpleNamespace

    from kernelhub.optimization.models import SearchSession
    from kernelhub.optimization.runner import distill_skills, make_context_provider

    session = SearchSession.objects.create(
        team=teams["beta"], problem=library_problem, hardware=hardware["interpreter"],
        status="finished", budget_evaluations=1)
    provider = make_context_provider(session)
    assert provider.scope == KnowledgeScope.for_teams([teams["beta"].pk])
    nodes = [dict(n, result={"integrity_flags": []}, diagnostics_summary=n["diagnostics"])
             for n in lesson("runner_split", str(session.pk))]
    distill_skills(session, SimpleNamespace(nodes=nodes))
    skill = Skill.objects.get(transformation="runner_split")
    assert skill.team == teams["beta"] and not skill.shared


def test_a_stale_vector_under_a_reused_row_id_takes_the_new_chunk(kb, ingest, teams):
    """Chroma keeps vectors that a rolled-back transaction or a reset database no longer has
    rows for; a new chunk that gets such an id must carry its own text and team, not the
    stale ones (Chroma's `add` silently keeps an id it already holds)."""
    first = ingest("first.md", page("First tiling", "quibblefrost"), team=teams["alpha"])
    after = max(int(i) for i in chunk_ids(first))
    stale = [str(after + n) for n in range(1, 41)]  # the ids the next chunks will take
    vector = embed_query("stale")
    store.upsert(store.CHUNKS, stale, np.repeat(vector[None, :], len(stale), axis=0),
                 [{"document_id": -1, "team_id": teams["beta"].pk, "shared": False}] * len(stale),
                 ["stale text"] * len(stale))
    try:
        second = ingest("second.md", page("Second tiling", "zanzibarite"), team=teams["alpha"])
        ids = sorted(chunk_ids(second))
        assert set(ids) <= set(stale), "the test's premise: the new chunks reuse the stale ids"
        got = store.collection(store.CHUNKS).get(ids=ids, include=["metadatas", "documents"])
        assert {m["document_id"] for m in got["metadatas"]} == {second.pk}
        assert {m["team_id"] for m in got["metadatas"]} == {teams["alpha"].pk}
        assert all("zanzibarite" in text for text in got["documents"])
    finally:
        store.delete(store.CHUNKS, ids=stale)
