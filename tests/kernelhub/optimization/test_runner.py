"""The session runner end to end on the interpreter: rows, events, control, review, rebuild."""

import pytest

from kernelhub import placement
from kernelhub.optimization.models import Candidate, SearchSession
from kernelhub.optimization.services import (
    session_cancel,
    session_create,
    session_pause,
    session_resume,
    session_start,
)
from kernelhub.review.models import Review

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def session(teams, hardware, library_problem):
    return session_create(
        user=teams["users"][("alpha", "engineer")], team=teams["alpha"], problem=library_problem,
        hardware=hardware["interpreter"], budget_evaluations=3, seed=1,
        config={"children_per_step": 2, "max_in_flight": 2},
    )


def test_offline_session_runs_to_budget_and_proposes_its_best(session):
    session_start(session)
    assert placement.session_wait(session.pk, 600), "the session did not finish"
    session.refresh_from_db()
    assert session.status == SearchSession.Status.FINISHED, session.status_message
    assert session.evaluated_count == 3
    nodes = Candidate.objects.filter(session=session)
    root = nodes.get(parent=None)
    assert root.status == "reference" and root.node_id == "0"
    children = nodes.exclude(pk=root.pk)
    assert children.count() == 3 and all(c.result for c in children)
    best = session.best_candidate
    assert best is not None and best.status == "correct" and "triton.jit" in best.source
    assert session.baseline, "the root's baselines were not stored"
    # events: ordered, gap-free, and they tell the story
    seqs = list(session.events.values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))
    types = list(session.events.values_list("type", flat=True))
    assert types.count("node_created") == 4 and types.count("node_evaluated") >= 3
    assert "best_improved" in types
    statuses = [e.payload["status"] for e in session.events.filter(type="status_changed")]
    assert statuses[0] == "queued" and "running" in statuses and statuses[-1] == "finished"
    review = Review.objects.get(candidate=best)
    assert review.status == "pending" and review.proposed_by is None


def test_pause_resume_cancel_through_the_stored_status(session, teams):
    engineer = teams["users"][("alpha", "engineer")]
    session.budget_evaluations = 40
    session.save()
    session_start(session)
    _wait_for(lambda: Candidate.objects.filter(session=session).count() >= 2)
    session.refresh_from_db()
    session_pause(session, engineer)
    session_resume(session, engineer)
    session_cancel(session, engineer)
    assert placement.session_wait(session.pk, 300)
    session.refresh_from_db()
    assert session.status == SearchSession.Status.CANCELLED
    assert session.evaluated_count < 40
    statuses = [e.payload["status"] for e in session.events.filter(type="status_changed")]
    assert statuses.count("cancelled") == 1 and "paused" in statuses


def test_a_viewer_cannot_control_a_session(session, teams):
    from django.core.exceptions import PermissionDenied

    session.status = SearchSession.Status.RUNNING
    session.save()
    with pytest.raises(PermissionDenied):
        session_pause(session, teams["users"][("alpha", "viewer")])
    with pytest.raises(PermissionDenied):
        session_cancel(session, teams["users"][("beta", "admin")])


def test_resume_rebuilds_a_lost_loop_from_stored_nodes(session, teams):
    """A session whose loop died (server restart) resumes from its stored tree."""
    session_start(session)
    assert placement.session_wait(session.pk, 600)
    session.refresh_from_db()
    before = set(Candidate.objects.filter(session=session).values_list("node_id", flat=True))
    # Pretend the process died while paused, with budget left.
    SearchSession.objects.filter(pk=session.pk).update(
        status=SearchSession.Status.PAUSED, budget_evaluations=5, heartbeat_at=None)
    session.refresh_from_db()
    session_resume(session, teams["users"][("alpha", "engineer")])
    assert placement.session_wait(session.pk, 600)
    session.refresh_from_db()
    after = set(Candidate.objects.filter(session=session).values_list("node_id", flat=True))
    assert before < after and session.evaluated_count == 5
    assert session.status == SearchSession.Status.FINISHED


def _wait_for(predicate, timeout_s=300):
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError("condition not reached in time")
