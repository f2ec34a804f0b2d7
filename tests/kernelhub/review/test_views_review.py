"""Review pages: the queue, decisions with overrides, approved kernels, the audit trail."""

from __future__ import annotations

import pytest
from django.urls import reverse

from kernelhub.optimization.models import Candidate, SearchSession
from kernelhub.review.models import AuditEvent, Review
from kernelhub.review.services import kernel_propose

pytestmark = pytest.mark.django_db


def make_review(team, hardware, problem, node_id="n1", flags=None) -> Review:
    session = SearchSession.objects.create(team=team, problem=problem, hardware=hardware["h200"],
                                           status=SearchSession.Status.FINISHED)
    candidate = Candidate.objects.create(
        session=session, node_id=node_id, status="correct", source="# kernel\n", reward=0.9,
        speedup_vs_eager=2.5, speedup_vs_compile=1.4, coverage=0.99, integrity_flags=flags or [])
    return kernel_propose(candidate=candidate, user=None, automatic=True)


@pytest.fixture
def reviews(teams, hardware, library_problem):
    return {
        "clean": make_review(teams["alpha"], hardware, library_problem, "clean-node"),
        "flagged": make_review(teams["alpha"], hardware, library_problem, "flagged-node", flags=[
            {"check": "runtime.output_reuse", "evidence": "returned a cached tensor",
             "severity": "hack"}]),
        "beta": make_review(teams["beta"], hardware, library_problem, "beta-node"),
    }


def login(client, team, role):
    assert client.login(username=f"{team}-{role}", password=f"pw-{role}")


def decide(client, review, **data):
    payload = {f"r{review.pk}-{k}": v for k, v in data.items()}
    return client.post(reverse("review:decide", args=[review.pk]), payload)


def test_queue_is_team_scoped(client, reviews):
    login(client, "alpha", "viewer")
    page = client.get(reverse("review:queue")).content.decode()
    assert "clean-node" in page and "flagged-node" in page and "beta-node" not in page
    assert "returned a cached tensor" in page  # the flag's evidence is on the queue


def test_viewer_sees_no_decision_buttons_and_gets_403(client, reviews):
    login(client, "alpha", "viewer")
    page = client.get(reverse("review:queue")).content.decode()
    assert 'value="approve"' not in page and 'value="reject"' not in page
    assert decide(client, reviews["clean"], decision="approve").status_code == 403
    login(client, "alpha", "engineer")
    assert decide(client, reviews["clean"], decision="approve").status_code == 403
    reviews["clean"].refresh_from_db()
    assert reviews["clean"].status == "pending"


def test_other_team_gets_404(client, reviews):
    login(client, "beta", "reviewer")
    assert decide(client, reviews["clean"], decision="approve").status_code == 404


def test_reviewer_approves_and_the_kernel_is_listed(client, reviews, teams):
    login(client, "alpha", "reviewer")
    response = decide(client, reviews["clean"], decision="approve", comment="ship it")
    # The flagged kernel still waits: the reviewer lands on it, not on another page.
    assert response.status_code == 302
    assert response["Location"] == reverse("review:detail", args=[reviews["flagged"].pk])
    review = Review.objects.get(pk=reviews["clean"].pk)
    assert review.status == "approved" and review.reviewer == teams["users"][("alpha", "reviewer")]
    assert review.metrics["speedup_vs_eager"] == 2.5 and review.decided_at is not None
    page = client.get(reverse("review:approved")).content.decode()
    assert "clean-node" in page and "alpha-reviewer" in page and "ship it" in page
    assert "2.5×" in page and "H200" in page
    audit = client.get(reverse("review:audit")).content.decode()
    assert "kernel_approved" in audit and "ship it" in audit
    dashboard = client.get(reverse("dashboard")).content.decode()
    assert "clean-node" in dashboard


def test_flagged_kernel_needs_an_explicit_override_with_reason(client, reviews):
    login(client, "alpha", "reviewer")
    flagged = reviews["flagged"]
    response = decide(client, flagged, decision="approve", comment="looks fine")
    page = response.content.decode()
    assert response.status_code == 400 and "integrity flags (runtime.output_reuse)" in page
    assert "explicit override" in page
    response = decide(client, flagged, decision="approve", override_integrity="on")
    assert response.status_code == 400 and "Say why the integrity flags are overridden" in \
        response.content.decode()
    flagged.refresh_from_db()
    assert flagged.status == "pending"
    response = decide(client, flagged, decision="approve", override_integrity="on",
                      override_reason="reuse is by design: output buffer is donated")
    assert response.status_code == 302
    flagged.refresh_from_db()
    assert flagged.status == "approved" and flagged.integrity_override
    assert flagged.override_reason.startswith("reuse is by design")
    assert AuditEvent.objects.filter(action="kernel_approved",
                                     details__integrity_override=True).exists()


def test_reject_needs_a_comment(client, reviews):
    login(client, "alpha", "admin")
    response = decide(client, reviews["clean"], decision="reject", comment="  ")
    assert response.status_code == 400
    assert "Say why the kernel is rejected" in response.content.decode()
    response = decide(client, reviews["clean"], decision="reject", comment="too slow on H100")
    assert response.status_code == 302
    assert Review.objects.get(pk=reviews["clean"].pk).status == "rejected"
    page = client.get(reverse("review:queue")).content.decode()
    assert f'id="review-{reviews["clean"].pk}"' not in page and "rejected." in page


def test_deciding_twice_is_refused_clearly(client, reviews):
    login(client, "alpha", "reviewer")
    decide(client, reviews["clean"], decision="approve")
    response = decide(client, reviews["clean"], decision="reject", comment="changed my mind")
    assert response.status_code == 400 and "already decided" in response.content.decode()


def test_dashboard_counts_the_queue(client, reviews):
    login(client, "alpha", "viewer")
    page = client.get(reverse("dashboard")).content.decode()
    assert 'id="review-queue-count"' in page
    assert ">2</a>" in page


def test_review_page_shows_the_code_diffs_trials_and_findings(client, reviews):
    flagged = reviews["flagged"]
    candidate = flagged.candidate
    candidate.source = "class ModelNew:\n    pass  # fused\n"
    candidate.timing = {"candidate": {"median_ms": 0.02, "iqr_ms": 0.001, "samples": 30},
                        "eager": {"median_ms": 0.05, "iqr_ms": 0.002, "samples": 30}}
    candidate.result = {"correctness": [{"trial": 0, "seed": 7, "max_abs_error": 1e-7,
                                         "max_rel_error": 2e-6, "passed": True, "note": ""}]}
    candidate.diagnostics = {"roofline": {"available": True, "arithmetic_intensity": 0.25,
                                          "ridge_point": 10.0, "achieved_bandwidth_gbs": 2400,
                                          "peak_bandwidth_gbs": 4800, "achieved_tflops": 0.6,
                                          "peak_tflops": 990}}
    candidate.save()
    login(client, "alpha", "reviewer")
    page = client.get(reverse("review:detail", args=[flagged.pk])).content.decode()
    problem = candidate.session.problem.name
    assert f"{problem} · candidate flagged-node" in page
    assert "ModelNew" in page and 'class="highlight"' in page  # highlighted source
    assert "Diff against the reference" in page and "reference.py" in page
    assert "±5.0 %" in page and "±4.0 %" in page  # IQR relative to the median
    assert "50.0 % of peak bandwidth" in page and "memory-bound side" in page
    assert "returned a cached tensor" in page and 'value="approve"' in page
    login(client, "beta", "reviewer")
    assert client.get(reverse("review:detail", args=[flagged.pk])).status_code == 404


def test_a_decision_on_the_review_page_goes_on_to_the_next_item(client, reviews):
    login(client, "alpha", "reviewer")
    payload = {f"r{reviews['flagged'].pk}-decision": "reject",
               f"r{reviews['flagged'].pk}-comment": "reuses its output", "from": "detail"}
    response = client.post(reverse("review:decide", args=[reviews["flagged"].pk]), payload)
    assert response["Location"] == reverse("review:detail", args=[reviews["clean"].pk])
    response = decide(client, reviews["clean"], decision="approve", comment="ok")
    assert response["Location"] == reverse("review:approved")  # nothing left in the queue


def test_queue_cards_are_titled_by_problem_and_candidate(client, reviews):
    login(client, "alpha", "viewer")
    page = client.get(reverse("review:queue")).content.decode()
    problem = reviews["clean"].candidate.session.problem.name
    assert f"{problem} · candidate clean-node" in page
    assert reverse("review:detail", args=[reviews["clean"].pk]) in page
