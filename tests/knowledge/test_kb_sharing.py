"""Sharing and moving documents and skills: one rule for both kinds of row (admins of both
sides, both audit trails, and the vectors' metadata follows so retrieval scopes at once)."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied

from kernelhub.review.models import AuditEvent
from knowledge import store
from knowledge.models import Document, Skill
from knowledge.services import (
    distill_session_skills,
    document_assign_team,
    document_set_shared,
    skill_assign_team,
    skill_set_shared,
)

pytestmark = pytest.mark.django_db


def lesson(session: str) -> list[dict]:
    root = {"id": 0, "parent_id": None, "status": "correct", "family": "glorp",
            "hardware": "h100", "session": session}
    step = {"id": 1, "parent_id": 0, "status": "correct", "advantage": 0.5,
            "speedup_vs_eager": 1.7, "integrity_flags": [], "family": "glorp",
            "hardware": "h100", "session": session,
            "origin": {"transformation": "glorp rows", "params": {"BLOCK": 128}}}
    return [root, step]


def vector_metadata(row) -> list[dict]:
    if isinstance(row, Skill):
        return store.collection(store.SKILLS).get(ids=[f"skill-{row.pk}"],
                                                  include=["metadatas"])["metadatas"]
    ids = [str(pk) for pk in row.chunks.values_list("pk", flat=True)]
    return store.collection(store.CHUNKS).get(ids=ids, include=["metadatas"])["metadatas"]


@pytest.fixture
def rows(kb, ingest, teams):
    alpha = teams["alpha"]
    document = ingest("moving.md", b"# Moving\n\nThe glorp kernel tiles rows of 128.\n",
                      team=alpha)
    assert document.status == Document.Status.READY
    skill = distill_session_skills(lesson("m1"), team=alpha)[0]
    return {"document": document, "skill": skill}


@pytest.mark.parametrize("kind", ["document", "skill"])
def test_moving_needs_admins_of_both_teams_and_is_audited_on_both(rows, teams, kind):
    row = rows[kind]
    assign = document_assign_team if kind == "document" else skill_assign_team
    move = (lambda team, user: assign(document=row, team=team, user=user)) if kind == "document" \
        else (lambda team, user: assign(skill=row, team=team, user=user))
    alpha, beta = teams["alpha"], teams["beta"]
    for user in (teams["users"][("alpha", "engineer")], teams["users"][("alpha", "admin")],
                 teams["users"][("beta", "admin")]):  # alpha's admin is no admin of beta
        with pytest.raises(PermissionDenied, match=f"Moving {kind}s"):
            move(beta, user)
    assert type(row).objects.get(pk=row.pk).team_id == alpha.pk

    move(beta, None)  # the system
    assert type(row).objects.get(pk=row.pk).team_id == beta.pk
    moves = AuditEvent.objects.filter(action=f"{kind}_team_changed", target_id=str(row.pk),
                                      target_type=kind)
    assert set(moves.values_list("team", flat=True)) == {alpha.pk, beta.pk}
    assert {m["team_id"] for m in vector_metadata(row)} == {beta.pk}
    assert move(beta, None) is row and moves.count() == 2  # no change: nothing recorded


@pytest.mark.parametrize("kind", ["document", "skill"])
def test_sharing_is_for_admins_and_reaches_the_vectors(rows, teams, kind):
    row = rows[kind]
    share = (lambda shared, user: document_set_shared(document=row, shared=shared, user=user)) \
        if kind == "document" else \
        (lambda shared, user: skill_set_shared(skill=row, shared=shared, user=user))
    with pytest.raises(PermissionDenied, match=f"Sharing a {kind} with every team"):
        share(True, teams["users"][("alpha", "engineer")])
    share(True, teams["users"][("alpha", "admin")])
    assert type(row).objects.get(pk=row.pk).shared
    assert all(m["shared"] for m in vector_metadata(row))
    share(False, teams["users"][("alpha", "admin")])
    assert not any(m["shared"] for m in vector_metadata(row))
    actions = list(AuditEvent.objects.filter(target_id=str(row.pk), target_type=kind).order_by("pk")
                   .values_list("action", flat=True))
    assert actions == [f"{kind}_shared", f"{kind}_unshared"]
