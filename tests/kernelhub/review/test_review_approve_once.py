"""A candidate is approved at most once: service, UI, API, database and the BI feeds."""

from __future__ import annotations

import csv
import io
import json

import datetime as dt

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from kernelhub.optimization.models import Candidate, SearchSession
from kernelhub.review.models import AuditEvent, Review
from kernelhub.review.services import KernelAlreadyApproved, kernel_approve, kernel_propose

pytestmark = pytest.mark.django_db


@pytest.fixture
def approved(teams, hardware, library_problem):
    """An approved kernel of team alpha: (candidate, review)."""
    session = SearchSession.objects.create(team=teams["alpha"], problem=library_problem,
                                           hardware=hardware["h200"], status="finished")
    candidate = Candidate.objects.create(session=session, node_id="n1", status="correct",
                                         source="# k\n", speedup_vs_eager=2.0, reward=1.0)
    review = kernel_propose(candidate=candidate, user=teams["users"][("alpha", "engineer")])
    kernel_approve(review=review, reviewer=teams["users"][("alpha", "reviewer")], comment="ok")
    return candidate, review


def test_service_refuses_a_second_proposal_and_approval(teams, approved):
    candidate, review = approved
    with pytest.raises(KernelAlreadyApproved, match="already approved"):
        kernel_propose(candidate=candidate, user=teams["users"][("alpha", "engineer")])
    # A session that ends again proposes nothing new, and does not fail.
    assert kernel_propose(candidate=candidate, user=None, automatic=True) == review
    # A pending review left over from before the fix cannot be approved either.
    stale = Review.objects.create(team=review.team, candidate=candidate, hardware=review.hardware)
    with pytest.raises(KernelAlreadyApproved):
        kernel_approve(review=stale, reviewer=teams["users"][("alpha", "reviewer")])
    stale.refresh_from_db()
    assert stale.status == "pending"
    assert Review.objects.filter(candidate=candidate, status="approved").count() == 1


def test_database_constraint_holds_without_the_service(approved):
    candidate, review = approved
    with pytest.raises(IntegrityError), transaction.atomic():
        Review.objects.create(team=review.team, candidate=candidate, hardware=review.hardware,
                              status="approved", decided_at=timezone.now())


def test_page_hides_the_button_and_the_post_gives_a_message(client, teams, approved):
    candidate, _ = approved
    client.force_login(teams["users"][("alpha", "engineer")])
    url = reverse("optimization:candidate_detail", args=[candidate.pk])
    page = client.get(url).content.decode()
    assert 'id="propose"' not in page and 'id="approved-badge"' in page
    response = client.post(reverse("optimization:candidate_propose", args=[candidate.pk]),
                           follow=True)
    texts = [str(m) for m in response.context["messages"]]
    assert any("already approved" in t for t in texts), texts
    assert Review.objects.filter(candidate=candidate).count() == 1


def test_unapproved_candidate_still_offers_the_button(client, teams, approved):
    candidate, _ = approved
    other = Candidate.objects.create(session=candidate.session, node_id="n2", status="correct",
                                     source="# k\n")
    client.force_login(teams["users"][("alpha", "engineer")])
    page = client.get(reverse("optimization:candidate_detail", args=[other.pk])).content.decode()
    assert 'id="propose"' in page


def test_api_answers_409_with_a_json_error(teams, approved):
    candidate, review = approved
    api = APIClient()
    api.force_login(teams["users"][("alpha", "admin")])
    response = api.post("/api/v1/reviews", {"candidate": candidate.pk}, format="json")
    assert response.status_code == 409
    assert response.json()["code"] == "already_approved"
    assert "already approved" in response.json()["detail"]
    stale = Review.objects.create(team=review.team, candidate=candidate, hardware=review.hardware)
    response = api.post(f"/api/v1/reviews/{stale.pk}/approve", {"comment": "again"},
                        format="json")
    assert response.status_code == 409 and "already approved" in response.json()["detail"]


def test_queue_shows_the_refusal(client, teams, approved):
    candidate, review = approved
    stale = Review.objects.create(team=review.team, candidate=candidate, hardware=review.hardware)
    client.force_login(teams["users"][("alpha", "reviewer")])
    response = client.post(reverse("review:decide", args=[stale.pk]),
                           {f"r{stale.pk}-decision": "approve"})
    assert response.status_code == 400 and "already approved" in response.content.decode()


def test_bi_feeds_have_one_row_per_approved_kernel(teams, approved):
    candidate, review = approved
    api = APIClient()
    api.force_login(teams["users"][("alpha", "viewer")])
    with pytest.raises(KernelAlreadyApproved):
        kernel_propose(candidate=candidate, user=teams["users"][("alpha", "engineer")])
    rows = api.get("/odata/kernels").json()["value"]
    assert [r["candidate_id"] for r in rows] == [candidate.pk]
    body = b"".join(api.get("/api/v1/exports/kernels.csv").streaming_content).decode("utf-8-sig")
    assert [r["candidate_id"] for r in csv.DictReader(io.StringIO(body))] == [str(candidate.pk)]
    body = b"".join(api.get("/api/v1/exports/kernels.json").streaming_content)
    assert [r["candidate_id"] for r in json.loads(body)] == [candidate.pk]
    assert api.get("/api/v1/kernels/").json()["results"][0]["id"] == review.pk
    assert len(api.get("/api/v1/kernels/").json()["results"]) == 1


@pytest.mark.django_db(transaction=True)
def test_migration_removes_duplicates_keeping_the_earliest(teams, hardware, library_problem):
    executor = MigrationExecutor(connection)
    executor.migrate([("review", "0001_initial")])
    try:
        apps = executor.loader.project_state([("review", "0001_initial")]).apps
        OldReview = apps.get_model("review", "Review")
        session = SearchSession.objects.create(team=teams["alpha"], problem=library_problem,
                                               hardware=hardware["h200"], status="finished")
        twice = Candidate.objects.create(session=session, node_id="t", status="correct")
        once = Candidate.objects.create(session=session, node_id="o", status="correct")
        now = timezone.now()
        made = [OldReview.objects.create(team_id=teams["alpha"].pk, candidate_id=c.pk,
                                         hardware_id=hardware["h200"].pk, status="approved",
                                         decided_at=now + dt.timedelta(minutes=m))
                for c, m in ((twice, 5), (twice, 1), (twice, 9), (once, 3))]
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
    kept = list(Review.objects.filter(status="approved").order_by("candidate_id")
                .values_list("candidate_id", "pk"))
    assert kept == [(twice.pk, made[1].pk), (once.pk, made[3].pk)]
    removed = AuditEvent.objects.filter(action="kernel_duplicate_approval_removed")
    assert sorted(int(e.target_id) for e in removed) == sorted([made[0].pk, made[2].pk])
