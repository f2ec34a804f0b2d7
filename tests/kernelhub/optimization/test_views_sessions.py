"""Session and candidate pages: scoping, roles, the new-session form and the live page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from kernelhub.optimization.events import publish_session_event
from tests.page_assets import asset_urls, foreign_assets
from kernelhub.optimization.models import Candidate, SearchSession

pytestmark = pytest.mark.django_db

CANDIDATE_SOURCE = ("import torch\n\nclass ModelNew(torch.nn.Module):\n"
                    "    def forward(self, x):\n        return torch.relu(x) * 2.0\n")


@pytest.fixture
def alpha_session(teams, hardware, library_problem):
    session = SearchSession.objects.create(
        team=teams["alpha"], problem=library_problem, hardware=hardware["h200"],
        status=SearchSession.Status.RUNNING, created_by=teams["users"][("alpha", "engineer")])
    root = Candidate.objects.create(session=session, node_id="n0", depth=0, status="correct",
                                    source="import torch\n", origin={"synthesizer": "reference"})
    child = Candidate.objects.create(
        session=session, node_id="n1", parent=root, depth=1, status="correct",
        source=CANDIDATE_SOURCE, reward=0.8, speedup_vs_eager=1.7, speedup_vs_compile=1.2,
        coverage=0.97, origin={"synthesizer": "offline", "transformation": "grow BLOCK_SIZE",
                               "params": {"BLOCK_SIZE": 1024}, "prompt": "make it faster"},
        timing={"candidate": {"median_ms": 0.05, "iqr_ms": 0.001, "samples": 50,
                              "method": "cuda_events+l2_flush"}},
        diagnostics={"bottleneck": {"class": "memory-bound", "reason": "81% of peak bandwidth"},
                     "roofline": {"available": True, "arithmetic_intensity": 0.25,
                                  "achieved_tflops": 0.9},
                     "kernels": [{"name": "relu_kernel", "n_regs": 32, "n_spills": 0,
                                  "shared_bytes": 0, "num_warps": 4, "occupancy": 1.0}]},
        integrity_flags=[{"check": "runtime.timing_floor",
                          "evidence": "suspiciously close to floor", "severity": "warning"}],
        retrieved_context=[{"document": "H200 tuning guide", "text": "Coalesce loads.",
                            "score": 0.8, "page": 12}],
        result={"correctness": [{"trial": 0, "seed": 1, "max_abs_error": 0.0,
                                 "max_rel_error": 0.0, "rel_norm_error": 0.0, "passed": True,
                                 "note": ""}], "logs": "compiled ok"},
        prompt_tokens=1200, completion_tokens=300, cost_usd=0.0123)
    return {"session": session, "root": root, "child": child}


def login(client, team, role):
    assert client.login(username=f"{team}-{role}", password=f"pw-{role}")
    return client


# --- scoping -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,kwargs", [
    ("optimization:session_detail", "session"), ("optimization:session_events", "session"),
    ("optimization:session_controls", "session"), ("optimization:candidate_detail", "child"),
    ("optimization:candidate_diagnostics", "child")])
def test_other_teams_get_404(client, alpha_session, name, kwargs):
    login(client, "beta", "admin")
    assert client.get(reverse(name, args=[alpha_session[kwargs].pk])).status_code == 404


def test_other_teams_cannot_control_or_propose(client, alpha_session):
    login(client, "beta", "admin")
    session, child = alpha_session["session"], alpha_session["child"]
    assert client.post(reverse("optimization:session_control", args=[session.pk, "pause"])
                       ).status_code == 404
    response = client.post(reverse("optimization:candidate_propose", args=[child.pk]))
    assert response.status_code == 404


def test_pages_need_login(client, alpha_session):
    for url in (reverse("optimization:session_list"), reverse("optimization:session_new"),
                reverse("optimization:session_detail", args=[alpha_session["session"].pk])):
        response = client.get(url)
        assert response.status_code == 302 and reverse("login") in response["Location"]


def test_session_list_shows_only_own_team(client, alpha_session, teams, hardware, library_problem):
    beta = SearchSession.objects.create(team=teams["beta"], problem=library_problem,
                                        hardware=hardware["interpreter"])
    login(client, "alpha", "viewer")
    page = client.get(reverse("optimization:session_list")).content.decode()
    assert reverse("optimization:session_detail", args=[alpha_session["session"].pk]) in page
    assert reverse("optimization:session_detail", args=[beta.pk]) not in page


# --- roles ---------------------------------------------------------------------------------------

def test_viewer_sees_no_controls_and_gets_403_on_post(client, alpha_session):
    login(client, "alpha", "viewer")
    session = alpha_session["session"]
    page = client.get(reverse("optimization:session_detail", args=[session.pk])).content.decode()
    assert 'id="btn-pause"' not in page and 'id="btn-cancel"' not in page
    for action in ("pause", "resume", "cancel"):
        url = reverse("optimization:session_control", args=[session.pk, action])
        assert client.post(url).status_code == 403
    session.refresh_from_db()
    assert session.status == SearchSession.Status.RUNNING
    candidate_page = client.get(reverse("optimization:candidate_detail",
                                        args=[alpha_session["child"].pk])).content.decode()
    assert 'id="propose"' not in candidate_page
    assert client.post(reverse("optimization:candidate_propose",
                               args=[alpha_session["child"].pk])).status_code == 403
    assert client.get(reverse("optimization:session_new")).status_code == 403
    for page_name in ("dashboard", "optimization:session_list"):
        assert 'id="new-session"' not in client.get(reverse(page_name)).content.decode()


def test_engineer_pauses_resumes_and_cancels(client, alpha_session, monkeypatch):
    from kernelhub import placement

    monkeypatch.setattr(placement, "session_loop_alive", lambda session_id: True)
    login(client, "alpha", "engineer")
    session = alpha_session["session"]
    page = client.get(reverse("optimization:session_detail", args=[session.pk])).content.decode()
    assert 'id="btn-pause"' in page and 'id="btn-cancel"' in page and 'id="btn-resume"' not in page
    assert 'id="new-session"' in client.get(reverse("dashboard")).content.decode()
    url = lambda action: reverse("optimization:session_control", args=[session.pk, action])
    partial = client.post(url("pause"), HTTP_HX_REQUEST="true").content.decode()
    session.refresh_from_db()
    assert session.status == "paused" and 'id="btn-resume"' in partial
    # Pausing twice is refused with a clear message, nothing changes.
    partial = client.post(url("pause"), HTTP_HX_REQUEST="true").content.decode()
    assert "Only a running session can be paused" in partial
    client.post(url("resume"))
    session.refresh_from_db()
    assert session.status == "running"
    response = client.post(url("cancel"))
    assert response.status_code == 302
    session.refresh_from_db()
    assert session.status == "cancelled"
    types = list(session.events.values_list("type", flat=True))
    assert types.count("status_changed") == 3
    assert client.post(url("explode")).status_code == 404


# --- the live page -------------------------------------------------------------------------------

def test_live_page_carries_config_and_local_assets(client, alpha_session):
    login(client, "alpha", "viewer")
    session = alpha_session["session"]
    page = client.get(reverse("optimization:session_detail", args=[session.pk])).content.decode()
    assert 'id="session-config"' in page and f"/ws/sessions/{session.pk}/" in page
    assert "vendor/plotly/plotly-charts.min.js" in page and "js/session_live.js" in page
    assert "vendor/plotly/plotly-charts-gl.min.js" in page  # loaded where the tree uses WebGL
    assert asset_urls(page) and not foreign_assets(page)
    for element in ("tree-plot", "best-plot", "roofline-plot", "event-log", "progress-bar",
                    "throughput"):
        assert f'id="{element}"' in page
    assert '"memory_bandwidth_gbs": 4300' in page  # the roofline's ceilings come from the target


def test_static_scripts_are_found_locally():
    from django.contrib.staticfiles import finders

    for path in ("vendor/plotly/plotly-charts.min.js", "vendor/plotly/plotly-charts-gl.min.js",
                 "js/session_live.js", "css/pages.css"):
        assert finders.find(path), path


def test_events_endpoint_replays_after_seq(client, alpha_session):
    session = alpha_session["session"]
    for i in range(4):
        publish_session_event(session, "log", {"i": i})
    login(client, "alpha", "viewer")
    data = client.get(reverse("optimization:session_events", args=[session.pk]) + "?after=2").json()
    assert [e["seq"] for e in data["events"]] == [3, 4] and data["last_seq"] == 4


def test_diagnostics_json_for_the_panel(client, alpha_session):
    login(client, "alpha", "viewer")
    data = client.get(reverse("optimization:candidate_diagnostics",
                              args=[alpha_session["child"].pk])).json()
    assert data["node_id"] == "n1" and data["bottleneck"]["class"] == "memory-bound"
    assert data["roofline"]["achieved_tflops"] == 0.9 and data["kernels"][0]["n_regs"] == 32
    assert data["url"] == reverse("optimization:candidate_detail", args=[alpha_session["child"].pk])


# --- candidate page ------------------------------------------------------------------------------

def test_candidate_page_shows_source_diff_and_evaluation(client, alpha_session):
    login(client, "alpha", "engineer")
    page = client.get(reverse("optimization:candidate_detail",
                              args=[alpha_session["child"].pk])).content.decode()
    assert 'class="highlight' in page and "ModelNew" in page  # pygments-highlighted source
    assert "<span class='added'>+4</span> <span class='removed'>−0</span>" in page
    assert '<span class="gi">+class ModelNew(torch.nn.Module):' in page  # unified diff, highlighted
    assert "diff against parent n0".lower() in page.lower()
    for text in ("runtime.timing_floor", "suspiciously close to floor", "grow BLOCK_SIZE",
                 "make it faster", "H200 tuning guide", "Coalesce loads.", "1200 prompt",
                 "0.0123", "cuda_events+l2_flush", "memory-bound", "relu_kernel"):
        assert text in page, text
    assert 'id="propose"' in page


def test_propose_puts_the_candidate_in_the_queue(client, alpha_session):
    login(client, "alpha", "engineer")
    child = alpha_session["child"]
    response = client.post(reverse("optimization:candidate_propose", args=[child.pk]), follow=True)
    assert "is in the review queue" in response.content.decode()
    assert child.reviews.filter(status="pending").count() == 1
    page = client.get(reverse("optimization:candidate_detail", args=[child.pk])).content.decode()
    assert "in the review queue" in page and 'id="propose"' not in page


def test_proposing_an_incorrect_candidate_says_why(client, alpha_session):
    child = alpha_session["child"]
    Candidate.objects.filter(pk=child.pk).update(status="incorrect")
    login(client, "alpha", "engineer")
    response = client.post(reverse("optimization:candidate_propose", args=[child.pk]), follow=True)
    assert "Only correct kernels can be proposed" in response.content.decode()
    assert not child.reviews.exists()
