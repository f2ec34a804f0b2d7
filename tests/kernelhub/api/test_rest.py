"""REST resources: sessions lifecycle, reviews with the UI's rules, problems, filters,
cursor pagination, knowledge and skills, the schema and the offline Swagger UI."""

from __future__ import annotations

import pytest

from tests.page_assets import asset_urls, foreign_assets

pytestmark = pytest.mark.django_db


def test_session_lifecycle_through_the_api(user_client, workspace, library_problem, monkeypatch):
    from kernelhub import placement

    launched = []
    monkeypatch.setattr(placement, "session_launch", lambda session_id: launched.append(session_id))
    monkeypatch.setattr(placement, "session_loop_alive", lambda session_id: False)
    client = user_client("alpha", "engineer")
    response = client.post("/api/v1/sessions/", {
        "problem": library_problem.pk, "hardware": "interpreter", "strategy": "evolution",
        "budget_evaluations": 3, "start": True}, format="json")
    assert response.status_code == 201, response.content
    session = response.json()
    assert session["status"] == "queued" and session["strategy"] == "evolution"
    assert session["created_by"] == "alpha-engineer" and launched == [session["id"]]
    url = f"/api/v1/sessions/{session['id']}"
    assert client.post(url + "/pause/").json()["status"] == "paused"
    assert client.post(url + "/resume/").json()["status"] == "running"
    assert launched == [session["id"], session["id"]]  # the loop was gone: rebuilt
    assert client.post(url + "/cancel/").json()["status"] == "cancelled"
    response = client.post(url + "/pause/")
    assert response.status_code == 400 and "cancelled" in str(response.json())
    assert client.get(url + "/").json()["status"] == "cancelled"


@pytest.mark.parametrize("body, fragment", [
    ({"problem": 999999, "hardware": "interpreter"}, "No such problem"),
    ({"problem": "LIB", "hardware": "tpu-v9"}, "Unknown hardware"),
    ({"problem": "LIB", "hardware": "interpreter", "budget_evaluations": 0}, "budget_evaluations"),
    ({"problem": "LIB", "hardware": "interpreter", "strategy": "random"}, "strategy"),
    ({"hardware": "interpreter"}, "problem"),
    ({"problem": "LIB", "hardware": "interpreter", "screen": 5000}, "screen"),
    ({"problem": "LIB", "hardware": "interpreter", "screen": 2, "screen_finalists": 3},
     "cannot exceed the configurations screened"),
])
def test_bad_session_requests_get_400(user_client, workspace, library_problem, body, fragment):
    from kernelhub.optimization.models import SearchSession

    body = {**body, "start": False}
    if body.get("problem") == "LIB":
        body["problem"] = library_problem.pk
    before = SearchSession.objects.count()
    response = user_client("alpha", "admin").post("/api/v1/sessions/", body, format="json")
    assert response.status_code == 400 and fragment in str(response.json())
    assert SearchSession.objects.count() == before


def test_screening_asked_through_the_api_reaches_the_session(user_client, workspace,
                                                            library_problem):
    client = user_client("alpha", "engineer")
    response = client.post("/api/v1/sessions/", {
        "problem": library_problem.pk, "hardware": "interpreter", "screen": 8,
        "screen_finalists": 2, "start": False}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["screen"], body["screen_finalists"]) == (8, 2)
    from kernelhub.optimization.models import SearchSession

    assert SearchSession.objects.get(pk=body["id"]).config == {"screen": 8, "screen_finalists": 2}
    plain = client.post("/api/v1/sessions/", {
        "problem": library_problem.pk, "hardware": "interpreter", "start": False}, format="json")
    assert (plain.json()["screen"], plain.json()["screen_finalists"]) == (None, None)


def test_reviews_follow_the_ui_rules(user_client, workspace):
    from kernelhub.review.models import AuditEvent

    reviewer = user_client("alpha", "reviewer")
    pending = workspace["alpha"]["pending"]
    response = reviewer.post(f"/api/v1/reviews/{pending.pk}/approve/", {}, format="json")
    assert response.status_code == 400 and "integrity flags" in str(response.json())
    response = reviewer.post(f"/api/v1/reviews/{pending.pk}/reject/", {"comment": " "},
                             format="json")
    assert response.status_code == 400 and "Say why" in str(response.json())
    response = reviewer.post(f"/api/v1/reviews/{pending.pk}/reject/", {"comment": "too fast"},
                             format="json")
    assert response.status_code == 200 and response.json()["status"] == "rejected"
    assert response.json()["reviewer"] == "alpha-reviewer"
    response = reviewer.post(f"/api/v1/reviews/{pending.pk}/approve/",
                             {"override_reason": "x"}, format="json")
    assert response.status_code == 400 and "already decided" in str(response.json())
    assert AuditEvent.objects.filter(action="kernel_rejected", target_id=str(pending.pk)).exists()
    lazy = workspace["alpha"]["candidates"][2]
    response = user_client("alpha", "engineer").post("/api/v1/reviews/", {"candidate": lazy.pk},
                                                     format="json")
    assert response.status_code == 400 and "Only correct kernels" in str(response.json())


@pytest.mark.slow
def test_problem_upload_validates_by_running_it(user_client, workspace, tiny_problem_source):
    client = user_client("alpha", "engineer")
    response = client.post("/api/v1/problems/", {"name": "my-relu", "source": tiny_problem_source,
                                                 "family": "elementwise"}, format="json")
    assert response.status_code == 201, response.content
    problem = response.json()
    assert problem["team"] == workspace["alpha"]["session"].team_id and problem["dtype"] == "float32"
    response = client.post("/api/v1/problems/", {"name": "my-relu", "source": tiny_problem_source},
                           format="json")
    assert response.status_code == 400 and "already exists" in str(response.json())
    assert user_client("beta", "engineer").get(f"/api/v1/problems/{problem['id']}/").status_code == 404


def test_candidate_filters(key_client, api_keys, workspace):
    client = key_client(api_keys[("alpha", "read")])
    nodes = {c.pk: c.node_id for c in workspace["alpha"]["candidates"]}

    def listed(query):
        return sorted(nodes[r["id"]] for r in client.get("/api/v1/candidates/?" + query)
                      .json()["results"])

    assert listed("status=correct") == ["1", "3"]
    assert listed("status=correct,rejected_lazy") == ["1", "2", "3"]
    assert listed("speedup_min=3") == ["3"]
    assert listed("speedup_max=3") == ["1"]
    assert listed("integrity=clean&status=correct") == ["1"]
    assert listed("integrity=flagged") == ["3"]
    assert listed("coverage_min=0.5") == ["1", "3"]
    assert listed(f"session={workspace['alpha']['session'].pk}&reward_min=1.9") == ["1"]
    assert listed("hardware=h200") == []
    response = client.get("/api/v1/candidates/?integrity=maybe")
    assert response.status_code == 400 and "integrity" in response.json()
    assert client.get("/api/v1/candidates/?speedup_min=fast").status_code == 400


def test_cursor_pagination_walks_every_row_once(key_client, api_keys, workspace):
    client = key_client(api_keys[("alpha", "read")])
    url, seen = "/api/v1/candidates/?page_size=1", []
    while url:
        body = client.get(url).json()
        seen += [r["id"] for r in body["results"]]
        url = body["next"]
        assert "cursor=" in (url or "cursor=")
    assert sorted(seen) == sorted(c.pk for c in workspace["alpha"]["candidates"])
    assert len(seen) == len(set(seen)) == 4


def test_hardware_by_name_and_kernel_listing(key_client, api_keys, workspace):
    client = key_client(api_keys[("alpha", "read")])
    h200 = client.get("/api/v1/hardware/h200/").json()
    assert h200["memory_bandwidth_gbs"] == 4300.0 and h200["ceilings_source"] == "measured"
    (kernel,) = client.get("/api/v1/kernels/?speedup_min=1.5").json()["results"]
    assert kernel["id"] == workspace["alpha"]["approved"].pk and kernel["reviewer"] == "alpha-reviewer"
    assert kernel["bundle_url"].endswith(f"/api/v1/kernels/{kernel['id']}/bundle")
    assert client.get("/api/v1/kernels/?speedup_min=3").json()["results"] == []


def test_knowledge_search_and_skills(key_client, api_keys, workspace):
    from knowledge.models import Skill

    alpha = workspace["alpha"]["session"].team
    Skill.objects.create(title="Vectorize loads on H200", transformation="vectorize",
                         family="elementwise", hardware="h200", sessions=[123], team=alpha)
    client = key_client(api_keys[("alpha", "read")])
    (skill,) = client.get("/api/v1/skills/?q=vectorize").json()["results"]
    assert skill["transformation"] == "vectorize" and "sessions" not in skill
    assert skill["team"] == alpha.pk and skill["shared"] is False
    beta = key_client(api_keys[("beta", "read")])  # another team's skill is not theirs
    assert beta.get("/api/v1/skills/?q=vectorize").json()["results"] == []
    assert client.get("/api/v1/skills/?q=nothing-like-this").json()["results"] == []
    response = client.get("/api/v1/knowledge/search", {"q": "shared memory", "category": "nope"})
    assert response.status_code == 400 and "Unknown category" in str(response.json())
    response = client.get("/api/v1/knowledge/search", {"q": "shared memory bank conflicts",
                                                        "hardware": "h200"})
    assert response.status_code == 200 and isinstance(response.json(), list)
    assert client.get("/api/v1/knowledge/search").status_code == 400  # q is required
    assert client.get("/api/v1/knowledge/documents/").status_code == 200


def test_schema_and_offline_swagger_ui(client):
    import yaml

    schema = yaml.safe_load(client.get("/api/schema/").content)
    assert schema["openapi"].startswith("3.")
    paths = set(schema["paths"])
    for path in ("/api/v1/evaluations/", "/api/v1/sessions/{id}/pause/", "/api/v1/kernels/{id}/bundle/",
                 "/api/v1/sessions/{id}/trajectories/", "/api/v1/exports/{entity_set}.{fmt}",
                 "/api/v1/candidates/", "/api/v1/knowledge/search", "/api/v1/skills/"):
        assert path in paths, path
    assert "ApiKeyAuth" in schema["components"]["securitySchemes"]
    page = client.get("/api/docs/").content.decode()
    assert "swagger-ui" in page and "/static/" in page
    assert asset_urls(page) and not foreign_assets(page)


@pytest.mark.slow
def test_knowledge_search_finds_an_ingested_manual(key_client, api_keys, workspace, tmp_path,
                                                   settings):
    from knowledge.services import document_delete, document_ingest_file

    # A vector store of its own: never the developer's var/chroma.
    settings.KERNELHUB_DATA_DIR = tmp_path / "data"

    (tmp_path / "data").mkdir()
    manual = tmp_path / "h200-notes.md"
    manual.write_text("# Shared memory\n\nOn the H200, shared memory is split into 32 banks; "
                      "pad tiles by one element to avoid bank conflicts in transposes.\n\n"
                      "# Tensor cores\n\nUse bf16 inputs with fp32 accumulation for tl.dot.\n")
    document = document_ingest_file(manual, category="hardware-specific", vendor="nvidia",
                                     hardware="h200", team=workspace["alpha"]["session"].team)
    try:
        client = key_client(api_keys[("alpha", "read")])
        response = client.get("/api/v1/knowledge/search", {"q": "avoid shared memory bank "
                                                           "conflicts", "hardware": "h200", "k": 1})
        assert response.status_code == 200, response.content
        (hit,) = response.json()
        assert "bank conflicts" in hit["text"] and hit["document_id"] == document.pk
        docs = client.get("/api/v1/knowledge/documents/").json()["results"]
        assert [d["filename"] for d in docs] == ["h200-notes.md"] and docs[0]["status"] == "ready"
    finally:
        document_delete(document)


def test_api_applies_the_offline_coverage_gate_like_the_form(user_client, workspace, teams):
    """The browser and the REST API launch through one service: an offline session for a
    problem the offline synthesizer is known not to cover is refused by both, and nothing is
    stored; a problem not checked yet launches at once and its loop checks it first."""
    from kernelhub.optimization import services
    from kernelhub.optimization.models import SearchSession
    team, engineer = teams["alpha"], teams["users"][("alpha", "engineer")]
    problem = services.problem_create(
        name="sorter", team=team, user=engineer, request_offline_coverage=False,
        source="import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
               "    def forward(self, x):\n        return torch.sort(x, dim=-1).values\n\n"
               "def get_inputs():\n    return [torch.randn(8, 16)]\n\n"
               "def get_init_inputs():\n    return []\n")
    body = {"problem": problem.pk, "hardware": "interpreter", "synthesizer": "offline",
            "start": False}
    unchecked = user_client("alpha", "engineer").post("/api/v1/sessions/", body, format="json")
    assert unchecked.status_code == 201, unchecked.content
    session = SearchSession.objects.get(pk=unchecked.json()["id"])
    assert session.status_message.startswith("checking whether")
    assert services.session_check_offline_coverage(session) is False
    session.refresh_from_db()
    assert session.status == "failed" and "does not cover" in session.status_message
    before = SearchSession.objects.count()
    response = user_client("alpha", "engineer").post("/api/v1/sessions/", body, format="json")
    assert response.status_code == 400, response.content
    assert "does not cover" in str(response.json()["problem"])
    assert SearchSession.objects.count() == before