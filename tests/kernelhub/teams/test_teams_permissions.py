"""Team scoping and role rules, enforced in selectors and services."""

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from kernelhub.optimization.models import Candidate, SearchSession
from kernelhub.optimization.selectors import (
    candidate_list_for_user,
    problem_list_for_user,
    session_get_for_user,
    session_list_for_user,
)
from kernelhub.optimization.services import session_create
from kernelhub.review.selectors import review_list_for_user
from kernelhub.review.services import kernel_approve, kernel_propose, kernel_reject
from kernelhub.teams.selectors import team_list_for_user, user_can

pytestmark = pytest.mark.django_db


def make_session(teams, hardware, problem, team_name="alpha"):
    return session_create(
        user=teams["users"][(team_name, "engineer")], team=teams[team_name],
        problem=problem, hardware=hardware["interpreter"], budget_evaluations=4,
    )


def make_correct_candidate(session, flags=None):
    return Candidate.objects.create(
        session=session, node_id="n1", status="correct", reward=1.2, source="# kernel",
        speedup_vs_eager=1.5, integrity_flags=flags or [],
    )


@pytest.mark.parametrize("role,action,allowed", [
    ("viewer", "view", True), ("viewer", "launch", False), ("viewer", "review", False),
    ("engineer", "launch", True), ("engineer", "upload", True), ("engineer", "review", False),
    ("reviewer", "review", True), ("reviewer", "launch", False),
    ("admin", "launch", True), ("admin", "review", True), ("admin", "manage", True),
])
def test_role_matrix(teams, role, action, allowed):
    assert user_can(teams["users"][("alpha", role)], teams["alpha"], action) is allowed
    # Membership in alpha gives nothing in beta.
    assert user_can(teams["users"][("alpha", role)], teams["beta"], action) is False


def test_viewer_of_team_a_sees_nothing_of_team_b(teams, hardware, library_problem):
    session_b = make_session(teams, hardware, library_problem, "beta")
    make_correct_candidate(session_b)
    viewer_a = teams["users"][("alpha", "viewer")]
    assert list(team_list_for_user(viewer_a)) == [teams["alpha"]]
    assert not session_list_for_user(viewer_a).exists()
    assert not candidate_list_for_user(viewer_a).exists()
    from django.http import Http404

    with pytest.raises(Http404):
        session_get_for_user(viewer_a, session_b.pk)
    # The same viewer does see their own team's session.
    session_a = make_session(teams, hardware, library_problem, "alpha")
    assert list(session_list_for_user(viewer_a)) == [session_a]


def test_library_problems_visible_to_all_team_problems_only_to_members(
    teams, library_problem, tiny_problem_source
):
    from kernelhub.optimization.models import Problem

    own = Problem.objects.create(team=teams["beta"], name="beta-only", source=tiny_problem_source,
                                 source_sha256="x")
    assert set(problem_list_for_user(teams["users"][("alpha", "viewer")])) == {library_problem}
    assert set(problem_list_for_user(teams["users"][("beta", "viewer")])) == {library_problem, own}


def test_only_engineers_and_admins_launch(teams, hardware, library_problem):
    for role in ("viewer", "reviewer"):
        with pytest.raises(PermissionDenied):
            session_create(user=teams["users"][("alpha", role)], team=teams["alpha"],
                           problem=library_problem, hardware=hardware["interpreter"])
    with pytest.raises(PermissionDenied):  # an engineer of beta cannot launch in alpha
        session_create(user=teams["users"][("beta", "engineer")], team=teams["alpha"],
                       problem=library_problem, hardware=hardware["interpreter"])


def test_session_create_validates_budget_and_records_event(teams, hardware, library_problem):
    with pytest.raises(ValidationError, match="budget"):
        session_create(user=teams["users"][("alpha", "engineer")], team=teams["alpha"],
                       problem=library_problem, hardware=hardware["interpreter"],
                       budget_evaluations=0)
    session = make_session(teams, hardware, library_problem)
    assert session.status == SearchSession.Status.QUEUED
    events = list(session.events.values_list("seq", "type"))
    assert events == [(1, "status_changed")]


def test_only_reviewers_approve(teams, hardware, library_problem):
    session = make_session(teams, hardware, library_problem)
    candidate = make_correct_candidate(session)
    review = kernel_propose(candidate=candidate, user=teams["users"][("alpha", "engineer")])
    for role in ("viewer", "engineer"):
        with pytest.raises(PermissionDenied):
            kernel_approve(review=review, reviewer=teams["users"][("alpha", role)])
    with pytest.raises(PermissionDenied):  # a reviewer of another team
        kernel_approve(review=review, reviewer=teams["users"][("beta", "reviewer")])
    approved = kernel_approve(review=review, reviewer=teams["users"][("alpha", "reviewer")],
                              comment="ship it")
    assert approved.status == "approved"
    assert approved.metrics["speedup_vs_eager"] == 1.5
    trail = list(review.team.audit_events.filter(action__startswith="kernel_")
                 .values_list("action", flat=True))  # (role changes are in the trail too)
    assert trail == ["kernel_approved", "kernel_proposed"]
    with pytest.raises(ValidationError, match="already decided"):
        kernel_reject(review=approved, reviewer=teams["users"][("alpha", "reviewer")],
                      comment="changed my mind")


def test_flagged_kernel_needs_explicit_override(teams, hardware, library_problem):
    session = make_session(teams, hardware, library_problem)
    candidate = make_correct_candidate(
        session, flags=[{"check": "roofline.impossible_speedup", "evidence": "9x", "severity": "warning"}]
    )
    review = kernel_propose(candidate=candidate, user=teams["users"][("alpha", "engineer")])
    reviewer = teams["users"][("alpha", "reviewer")]
    with pytest.raises(ValidationError, match="override"):
        kernel_approve(review=review, reviewer=reviewer)
    approved = kernel_approve(review=review, reviewer=reviewer,
                              override_reason="re-timed by hand: real")
    assert approved.integrity_override and approved.override_reason


def test_incorrect_kernels_cannot_be_proposed(teams, hardware, library_problem):
    session = make_session(teams, hardware, library_problem)
    bad = Candidate.objects.create(session=session, node_id="bad", status="incorrect")
    with pytest.raises(ValidationError, match="correct"):
        kernel_propose(candidate=bad, user=teams["users"][("alpha", "engineer")])


def test_reject_needs_a_comment_and_reviews_are_scoped(teams, hardware, library_problem):
    session = make_session(teams, hardware, library_problem)
    review = kernel_propose(candidate=make_correct_candidate(session),
                            user=teams["users"][("alpha", "engineer")])
    with pytest.raises(ValidationError):
        kernel_reject(review=review, reviewer=teams["users"][("alpha", "reviewer")], comment=" ")
    assert not review_list_for_user(teams["users"][("beta", "admin")]).exists()
    assert review_list_for_user(teams["users"][("alpha", "viewer")]).count() == 1
