"""Issue 32 item 5: the approved kernels as a server-side list: search, filter, sort, pages,
htmx partials, team scope."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from kernelhub.optimization.models import Candidate, Problem, SearchSession
from kernelhub.review.services import kernel_approve, kernel_propose

pytestmark = pytest.mark.django_db


def approve(team, hardware, problem, node_id: str, speedup: float):
    session = SearchSession.objects.create(team=team, problem=problem, hardware=hardware,
                                           status=SearchSession.Status.FINISHED)
    candidate = Candidate.objects.create(
        session=session, node_id=node_id, status="correct", source="# kernel\n", reward=0.5,
        speedup_vs_eager=speedup, speedup_vs_compile=speedup / 2, coverage=1.0)
    review = kernel_propose(candidate=candidate, user=None, automatic=True)
    reviewer = get_user_model().objects.get(username=f"{team.name}-reviewer")
    return kernel_approve(review=review, reviewer=reviewer, comment="ok")


@pytest.fixture
def approved(teams, hardware, library_problem):
    other = Problem.objects.create(name="softmax-rows", source=library_problem.source,
                                   source_sha256=library_problem.source_sha256)
    kernels = [approve(teams["alpha"], hardware["h200"], library_problem, f"relu-{i}", 1 + i)
               for i in range(30)]
    kernels.append(approve(teams["alpha"], hardware["h200"], other, "soft-0", 9.5))
    kernels.append(approve(teams["beta"], hardware["h200"], other, "beta-0", 50.0))
    return kernels


def rows(page: str) -> list[str]:
    body = page[page.index("<tbody>"):page.index("</tbody>")]
    return [line for line in body.split("<tr>")[1:]]


def test_pages_of_25_newest_approval_first_within_the_team(client, approved):
    client.login(username="alpha-viewer", password="pw-viewer")
    page = client.get(reverse("review:approved")).content.decode()
    assert "31 approved kernels · page 1 of 2" in page
    assert len(rows(page)) == 25 and "soft-0" in rows(page)[0]
    assert "beta-0" not in page
    second = client.get(reverse("review:approved"), {"page": 2}).content.decode()
    assert len(rows(second)) == 6 and "relu-0" in rows(second)[-1]


def test_sort_by_speedup_and_search_by_problem(client, approved):
    client.login(username="alpha-viewer", password="pw-viewer")
    fastest = client.get(reverse("review:approved"), {"sort": "-eager"}).content.decode()
    assert "relu-29" in rows(fastest)[0] and "relu-28" in rows(fastest)[1]
    slowest = client.get(reverse("review:approved"), {"sort": "eager"}).content.decode()
    assert "relu-0" in rows(slowest)[0]
    found = client.get(reverse("review:approved"), {"q": "softmax"}).content.decode()
    assert "1 approved kernels" in found and "soft-0" in found and "relu-1" not in found
    by_session = client.get(reverse("review:approved"),
                            {"q": str(approved[3].candidate.session_id)}).content.decode()
    assert "relu-3" in by_session and len(rows(by_session)) == 1


def test_filter_by_least_speedup_and_a_bad_number_is_said(client, approved):
    client.login(username="alpha-viewer", password="pw-viewer")
    page = client.get(reverse("review:approved"), {"min_speedup": "25"}).content.decode()
    assert "6 approved kernels" in page and "soft-0" not in page  # relu-24..29: 25..30×
    bad = client.get(reverse("review:approved"), {"min_speedup": "fast"}).content.decode()
    assert "Enter a number." in bad and "0 approved kernels" in bad


def test_htmx_gets_only_the_list(client, approved):
    client.login(username="alpha-viewer", password="pw-viewer")
    partial = client.get(reverse("review:approved"), {"sort": "problem"},
                         HTTP_HX_REQUEST="true").content.decode()
    assert partial.lstrip().startswith('<div id="approved-list">')
    assert "<h1>" not in partial and 'id="list-sort"' in partial
