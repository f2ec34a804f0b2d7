"""Issue 17: the dashboard's knowledge card and charts, problem pages, candidate page
numbers, approved-kernel downloads, favicon, hashed static names — all team-scoped."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone

from kernelhub.optimization.models import Candidate, SearchSession
from kernelhub.optimization.templatetags.kh_format import ms, sig, times

pytestmark = pytest.mark.django_db


def login(client, team, role="viewer"):
    assert client.login(username=f"{team}-{role}", password=f"pw-{role}")


def gpu_session(teams, hardware, problem, team="alpha", **fields):
    session = SearchSession.objects.create(team=teams[team], problem=problem,
                                           hardware=hardware["h200"], status="finished", **fields)
    root = Candidate.objects.create(session=session, node_id="0", status="reference")
    now = timezone.now()
    parent = Candidate.objects.create(
        session=session, node_id="1", parent=root, depth=1, status="correct",
        speedup_vs_eager=1.5, evaluated_at=now - dt.timedelta(minutes=2),
        diagnostics={"roofline": {"arithmetic_intensity": 0.25, "achieved_tflops": 0.5}})
    child = Candidate.objects.create(
        session=session, node_id="2", parent=parent, depth=2, status="correct",
        speedup_vs_eager=2.4567, speedup_vs_compile=1.2, evaluated_at=now,
        timing={"candidate": {"median_ms": 0.0175, "iqr_ms": 0.00012345, "samples": 30},
                "eager": {"median_ms": 0.043, "samples": 30},
                "compile": {"median_ms": None, "iqr_ms": None, "samples": 0}},
        origin={"params": {"BLOCK": 1024, "num_warps": 4, "note": "x" * 200}},
        result={"correctness": [{"trial": 0, "seed": 1, "max_abs_error": 1.23456789012345e-07,
                                 "max_rel_error": 0.000123456789, "rel_norm_error": 0.0,
                                 "passed": True}]},
        diagnostics={"roofline": {"arithmetic_intensity": 0.25, "achieved_tflops": 1.0,
                                  "available": True}})
    Candidate.objects.create(session=session, node_id="3", parent=parent, depth=2,
                             status="hack_suspected", evaluated_at=now)
    return session, parent, child


def test_number_filters_use_three_significant_digits_and_units():
    assert sig(1.23456789012345e-07) == "1.23e-07" and sig(0.0323) == "0.0323"
    assert sig(None) == "–" and times(2.4567) == "2.46×"
    assert ms(0.0175) == "17.5 µs" and ms(34.21) == "34.2 ms" and ms(1500) == "1.5 s"


def test_knowledge_stats_counts_only_what_the_team_may_read(teams):
    from knowledge.models import Chunk, Document, Skill
    from knowledge.selectors import KnowledgeScope, knowledge_stats

    def doc(team, shared=False, status="ready"):
        d = Document.objects.create(title="m", filename="m.md", team=team, shared=shared,
                                    status=status, content_hash=f"{team}{shared}{status}",
                                    size_bytes=1, kind="markdown", category="guide")
        Chunk.objects.create(document=d, ordinal=0, text="t")
        return d

    doc(teams["alpha"]), doc(teams["alpha"], status="processing"), doc(teams["beta"])
    doc(teams["beta"], shared=True)
    Skill.objects.create(title="s", transformation="t", team=teams["beta"])
    alpha = knowledge_stats(scope=KnowledgeScope.for_user(teams["users"][("alpha", "viewer")]))
    assert alpha == {"documents": 3, "ready": 2, "chunks": 3, "skills": 0}
    beta = knowledge_stats(scope=KnowledgeScope.for_teams([teams["beta"].pk]))
    assert beta == {"documents": 2, "ready": 2, "chunks": 2, "skills": 1}


def test_dashboard_knowledge_card_and_charts(client, teams, hardware, library_problem):
    from kernelhub.review.services import kernel_approve, kernel_propose
    from knowledge.models import Document

    Document.objects.create(title="m", filename="m.md", team=teams["alpha"], status="ready",
                            content_hash="a", size_bytes=1, kind="markdown", category="guide")
    login(client, "alpha")
    page = client.get(reverse("dashboard")).content.decode()
    assert "<span class=\"big\">1</span> document ·" in page
    assert 'id="chart-approved-empty"' in page and 'id="chart-evaluations"' not in page

    session, _, child = gpu_session(teams, hardware, library_problem,
                                    best_speedup_vs_eager=2.4567)
    beta_session, _, _ = gpu_session(teams, hardware, library_problem, team="beta",
                                     best_speedup_vs_eager=9.9)
    review = kernel_propose(candidate=child, user=teams["users"][("alpha", "engineer")])
    kernel_approve(review=review, reviewer=teams["users"][("alpha", "reviewer")], comment="ok")
    page = client.get(reverse("dashboard")).content.decode()
    for chart in ("chart-approved", "chart-evaluations", "chart-best"):
        assert f'data-chart="{chart}-data"' in page
    assert "plotly" in page and f'title="session {beta_session.pk}"' not in page
    charts = client.get(reverse("dashboard")).context["charts"]
    # beta's session stays out of the charts (its value, not its digits: timestamps hold "9.9")
    best_values = [y for trace in charts["best"]["data"] for y in trace["y"]]
    assert best_values and 9.9 not in best_values
    outcomes = {t["name"]: sum(t["y"]) for t in charts["evaluations"]["data"]}
    assert outcomes == {"correct": 2, "hack": 1}
    assert charts["approved"]["data"][0]["x"] == ["elementwise · H200 (Hopper)"] or \
        "elementwise" in charts["approved"]["data"][0]["x"][0]
    # the kernel is named by its candidate, linked to its page, beside its problem (issue 32)
    approved = page[page.index('id="approved-kernels"'):]
    link = reverse("optimization:candidate_detail", args=[review.candidate_id])
    assert f'<a href="{link}"' in approved and f"candidate {child.node_id}</a>" in approved
    assert f"<td>{library_problem.name}</td>" in approved


def test_problem_pages_list_coverage_sessions_and_chart(client, teams, hardware, library_problem):
    session, _, _ = gpu_session(teams, hardware, library_problem, best_speedup_vs_eager=2.45)
    login(client, "alpha")
    listing = client.get(reverse("problem_list")).content.decode()
    assert library_problem.name in listing and "2.45×" in listing
    page = client.get(reverse("problem_detail", args=[library_problem.pk]))
    html = page.content.decode()
    assert page.status_code == 200 and 'data-chart="problem-best-data"' in html
    assert f'href="/sessions/{session.pk}/"' in html and 'id="coverage-state"' in html
    series = page.context["chart"]["data"][0]["y"]
    assert series == [1.5, 2.4567]  # best so far, improving
    login(client, "beta")
    assert f'href="/sessions/{session.pk}/"' not in client.get(
        reverse("problem_detail", args=[library_problem.pk])).content.decode()


def test_candidate_page_title_numbers_params_and_roofline(client, teams, hardware, library_problem):
    session, parent, child = gpu_session(teams, hardware, library_problem)
    login(client, "alpha")
    response = client.get(reverse("optimization:candidate_detail", args=[child.pk]))
    html = response.content.decode()
    # Titled by problem and node, never by the row's primary key (issue 32).
    assert f"<h1>{library_problem.name} · candidate {child.node_id} " in html
    assert "node 2" in html
    assert "1.23e-07" in html and "1.23456789012345e-07" not in html
    assert "17.5 µs" in html and "2.46×" in html
    assert 'class="wrap" id="origin-params"' in html and "BLOCK=1024" in html
    labels = [t["name"] for t in response.context["roofline_chart"]["data"][2:]]
    assert labels == ["candidate 2", "parent 1", "eager PyTorch"]  # compile was never timed


def test_interpreter_candidate_says_timings_are_not_comparable(client, teams, hardware,
                                                               library_problem):
    session = SearchSession.objects.create(team=teams["alpha"], problem=library_problem,
                                           hardware=hardware["interpreter"], status="finished")
    node = Candidate.objects.create(session=session, node_id="1", status="correct", reward=1.5,
                                    result={"speedup_label": "interpreter: ... (neutral)"})
    login(client, "alpha")
    html = client.get(reverse("optimization:candidate_detail", args=[node.pk])).content.decode()
    assert "Correctness check only — timings are not comparable" in html
    assert "neutral" not in html and 'id="candidate-roofline"' not in html
    live = client.get(reverse("optimization:session_detail", args=[session.pk])).content.decode()
    assert 'id="interpreter-note"' in live and 'id="best-plot"' not in live
    assert 'id="roofline-plot"' not in live and 'id="roofline-note"' in live


def test_approved_list_links_module_and_zip(client, teams, hardware, library_problem):
    from kernelhub.review.services import kernel_approve, kernel_propose

    _, _, child = gpu_session(teams, hardware, library_problem)
    review = kernel_propose(candidate=child, user=teams["users"][("alpha", "engineer")])
    kernel_approve(review=review, reviewer=teams["users"][("alpha", "reviewer")], comment="ok")
    login(client, "alpha")
    html = client.get(reverse("review:approved")).content.decode()
    module, bundle = f"/api/v1/kernels/{review.pk}/module", f"/api/v1/kernels/{review.pk}/bundle"
    assert module in html and bundle in html
    assert client.get(module).status_code == 200 and client.get(bundle)["Content-Type"] == \
        "application/zip"


def test_empty_states_and_navigation(client, teams):
    login(client, "alpha", "admin")
    html = client.get(reverse("dashboard")).content.decode()
    for link in ("nav-problems", "nav-sessions", "nav-kernels", "nav-review", "nav-knowledge",
                 "nav-skills", "nav-teams", "nav-api-keys"):
        assert f'id="{link}"' in html
    assert 'rel="icon"' in html
    assert "empty-state" in client.get(reverse("problem_list")).content.decode()
    assert "empty-state" in client.get(reverse("review:approved")).content.decode()
    skills = client.get(reverse("knowledge:skill_list")).content.decode()
    assert "distilled when a search session finishes" not in skills and "adds none" in skills


def test_favicon_and_hashed_static_names(client, settings, tmp_path):
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith(".svg")
    from kernelhub.staticfiles import KernelHubStaticFilesStorage

    storage = KernelHubStaticFilesStorage()
    storage.hashed_files = {"plotly/plotly.min.js": "plotly/plotly.min.0123456789ab.js"}
    settings.DEBUG = True
    assert storage.url("plotly/plotly.min.js").endswith("plotly.min.0123456789ab.js")
    assert storage.url("css/never-collected.css").endswith("css/never-collected.css")


def test_finished_document_progress_replaces_the_page_body(client, teams):
    from knowledge.models import Document

    document = Document.objects.create(
        title="Manual", filename="m.md", team=teams["alpha"], status="ready", progress=100,
        content_hash="b", size_bytes=1, kind="markdown", category="general-optimization")
    login(client, "alpha")
    url = reverse("knowledge:document_progress", args=[document.pk]) + "?detail=1"
    response = client.get(url, HTTP_HX_REQUEST="true")
    assert response["HX-Retarget"] == "#kb-document" and response["HX-Reswap"] == "outerHTML"
    html = response.content.decode()
    assert 'id="kb-document" data-status="ready"' in html and 'hx-swap-oob="true"' in html
    assert "hx-trigger" not in html  # finished: no more polling
