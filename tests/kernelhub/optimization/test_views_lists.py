"""Lists that scale (issue 32 item 5): sessions, a session's candidates and problems are
filtered, sorted and paginated on the server; two kernels compare side by side; any
candidate's source downloads for its team only."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from kernelhub.optimization.models import Candidate, SearchSession

pytestmark = pytest.mark.django_db


@pytest.fixture
def many_sessions(teams, hardware, library_problem):
    return [SearchSession.objects.create(
        team=teams["alpha"], problem=library_problem, hardware=hardware["h200"],
        status="finished" if i % 3 else "failed", best_speedup_vs_eager=1.0 + i / 10,
        evaluated_count=i) for i in range(60)]


@pytest.fixture
def candidates(many_sessions):
    session = many_sessions[-1]
    return session, [Candidate.objects.create(
        session=session, node_id=str(i), status="correct" if i % 2 else "incorrect",
        speedup_vs_eager=1.0 + i, source=f"# kernel {i}\nx = {i}\n",
        timing={"candidate": {"median_ms": 1.0 / (i + 1), "iqr_ms": 0.01, "samples": 9}},
        origin={"transformation": "fuse" if i < 5 else "tile"}) for i in range(80)]


def rows(page: str, table_id: str) -> list[str]:
    body = page.split(f'id="{table_id}"', 1)[1].split("</tbody>", 1)[0]
    return re.findall(r"<tr[ >]", body)[1:]


def test_sessions_page_paginates_filters_and_sorts(client, many_sessions):
    assert client.login(username="alpha-viewer", password="pw-viewer")
    page = client.get(reverse("optimization:session_list")).content.decode()
    assert page.count('class="status-') == 25 and "60 sessions" in page and "page 1 of 3" in page
    failed = client.get(reverse("optimization:session_list"), {"status": "failed"}).content.decode()
    assert "20 sessions" in failed and "status-finished" not in failed
    ordered = client.get(reverse("optimization:session_list"), {"sort": "eager"}).content.decode()
    first = re.search(r'/sessions/(\d+)/"', ordered).group(1)
    assert int(first) == many_sessions[0].pk  # ascending best speedup: the slowest first
    partial = client.get(reverse("optimization:session_list"), {"page": 3},
                         HTTP_HX_REQUEST="true").content.decode()
    assert partial.lstrip().startswith('<div id="session-list">') and "<html" not in partial
    assert partial.count('class="status-') == 10


def test_candidates_table_filters_sorts_and_links_downloads(client, candidates):
    session, cands = candidates
    assert client.login(username="alpha-viewer", password="pw-viewer")
    url = reverse("optimization:candidate_list", args=[session.pk])
    page = client.get(url).content.decode()
    assert "80 candidates" in page and page.count('name="c"') == 50
    assert page.index(">candidate 79<") < page.index(">candidate 78<")  # × eager, best first
    tiles = client.get(url, {"status": "correct", "transformation": "tile"}).content.decode()
    assert "38 candidates" in tiles  # odd nodes 5..79
    assert "/download/" in page
    assert client.login(username="beta-admin", password="pw-admin")
    assert client.get(url).status_code == 404


def test_download_of_any_candidate_respects_teams(client, candidates):
    _, cands = candidates
    incorrect = cands[0]
    assert client.login(username="alpha-viewer", password="pw-viewer")
    response = client.get(reverse("optimization:candidate_download", args=[incorrect.pk]))
    assert response.status_code == 200 and response.content.decode() == incorrect.source
    assert "attachment" in response["Content-Disposition"]
    assert client.login(username="beta-admin", password="pw-admin")
    assert client.get(reverse("optimization:candidate_download",
                              args=[incorrect.pk])).status_code == 404


def test_compare_two_kernels_side_by_side(client, candidates):
    _, cands = candidates
    assert client.login(username="alpha-viewer", password="pw-viewer")
    response = client.get(reverse("optimization:candidate_compare"),
                          {"c": [cands[3].pk, cands[9].pk]})
    page = response.content.decode()
    assert response.status_code == 200 and "Compare 2 kernels" in page
    assert "candidate 3 → candidate 9" in page and "x = 9" in page  # the code diff
    assert "4×" in page and "10×" in page and "250 µs" in page
    one = client.get(reverse("optimization:candidate_compare"), {"c": [cands[3].pk]})
    assert one.status_code == 302
    assert client.login(username="beta-admin", password="pw-admin")
    assert client.get(reverse("optimization:candidate_compare"),
                      {"c": [cands[3].pk, cands[9].pk]}).status_code == 404


def test_problems_page_filters_by_name(client, many_sessions, library_problem):
    assert client.login(username="alpha-viewer", password="pw-viewer")
    page = client.get(reverse("problem_list"), {"q": library_problem.name[:4]}).content.decode()
    assert library_problem.name in page
    none = client.get(reverse("problem_list"), {"q": "no-such-problem"}).content.decode()
    assert "No problem matches." in none
