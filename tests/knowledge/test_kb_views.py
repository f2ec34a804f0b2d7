"""Pages: upload (engineers only), live progress fragment, search, skills."""

import pytest
from django.urls import reverse

from knowledge.models import Document, Skill
from knowledge.services import distill_session_skills, document_process

GUIDE = b"# Occupancy\n\nEach EU holds at most eight wavefronts of the glorp kernel.\n"


@pytest.fixture
def engineer(client, teams):
    client.force_login(teams["users"][("alpha", "engineer")])
    return client


@pytest.fixture
def viewer(client, teams):
    client.force_login(teams["users"][("alpha", "viewer")])
    return client


def post_upload(client, name="occ.md", data=GUIDE, **fields):
    from django.core.files.uploadedfile import SimpleUploadedFile

    payload = {"file": SimpleUploadedFile(name, data), "category": "hardware-specific",
               "vendor": "amd", "hardware": "mi300x", "title": "", **fields}
    return client.post(reverse("knowledge:document_upload"), payload)


def test_list_shows_upload_form_only_to_uploaders(kb, engineer, viewer, teams, client):
    client.force_login(teams["users"][("alpha", "viewer")])
    page = client.get(reverse("knowledge:document_list")).content.decode()
    assert "kb-search" in page and "kb-upload-form" not in page
    client.force_login(teams["users"][("alpha", "engineer")])
    assert "kb-upload-form" in client.get(reverse("knowledge:document_list")).content.decode()


def test_viewer_cannot_upload(kb, viewer):
    assert post_upload(viewer).status_code == 403
    assert not Document.objects.filter(filename="occ.md").exists()


def test_bad_upload_shows_the_reason(kb, engineer):
    response = post_upload(engineer, name="occ.pdf", data=b"PK\x03\x04zip")
    assert response.status_code == 400
    assert "named .pdf but it is a ZIP archive" in response.content.decode()
    assert not Document.objects.filter(filename="occ.pdf").exists()


def test_upload_then_progress_fragment(kb, engineer, teams, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = post_upload(engineer, team=str(teams["alpha"].pk))
    document = Document.objects.get(filename="occ.md")
    assert response.status_code == 302
    assert response["Location"] == reverse("knowledge:document_detail", args=[document.pk])
    assert len(callbacks) == 1  # indexing is queued for after the commit
    assert document.uploaded_by == teams["users"][("alpha", "engineer")]
    assert document.team == teams["alpha"]
    progress_url = reverse("knowledge:document_progress", args=[document.pk])
    pending = engineer.get(progress_url).content.decode()
    assert 'hx-trigger="every 1s"' in pending and "Waiting" in pending
    detail = engineer.get(reverse("knowledge:document_detail", args=[document.pk])).content.decode()
    assert progress_url in detail
    document_process(document.pk)  # what the background thread runs
    done = engineer.get(progress_url).content.decode()
    assert "Ready" in done and "100%" in done and "hx-trigger" not in done


def test_search_page(kb, viewer, ingest, teams):
    ingest("occ.md", GUIDE, hardware="mi300x", category="hardware-specific", team=teams["alpha"])
    page = viewer.get(reverse("knowledge:search"), {"q": "how many wavefronts of the glorp kernel",
                                                    "hardware": "mi300x", "k": 3})
    html = page.content.decode()
    assert page.status_code == 200 and "kb-results" in html
    assert "eight wavefronts of the glorp kernel" in html and "Occupancy" in html


def test_delete_needs_uploader(kb, viewer, engineer, teams, ingest, client):
    document = ingest("occ.md", GUIDE, team=teams["alpha"])
    url = reverse("knowledge:document_delete", args=[document.pk])
    client.force_login(teams["users"][("alpha", "viewer")])
    assert client.post(url).status_code == 403
    client.force_login(teams["users"][("alpha", "engineer")])
    assert client.post(url).status_code == 302
    assert not Document.objects.filter(pk=document.pk).exists()


def test_skill_pages_edit_and_retire(kb, client, teams):
    skill = distill_session_skills([
        {"id": 0, "parent_id": None, "status": "correct", "diagnostics": {"bottleneck": "memory"}},
        {"id": 1, "parent_id": 0, "status": "correct", "advantage": 0.5, "speedup_vs_eager": 1.5,
         "origin": {"transformation": "tile_rows", "params": {"BLOCK": 128}},
         "diagnostics": {"bottleneck": "compute"}, "integrity_flags": [], "family": "layernorm",
         "hardware": "h200", "session": "42"},
    ], team=teams["alpha"])[0]
    client.force_login(teams["users"][("alpha", "viewer")])
    listing = client.get(reverse("knowledge:skill_list"), {"q": "tile_rows"}).content.decode()
    assert "tile_rows for layernorm kernels on h200" in listing
    detail_url = reverse("knowledge:skill_detail", args=[skill.pk])
    assert "kb-skill-edit" not in client.get(detail_url).content.decode()
    assert client.post(detail_url, {"title": "x"}).status_code == 403
    assert client.post(reverse("knowledge:skill_retire", args=[skill.pk])).status_code == 403
    client.force_login(teams["users"][("alpha", "engineer")])
    form = {"title": "Tile rows by 128", "description": "Use BLOCK=128 rows per program.",
            "transformation": "tile_rows", "params": '{"BLOCK": 128}', "family": "layernorm",
            "hardware": "h200", "bottleneck_before": "memory", "bottleneck_after": "compute"}
    assert client.post(detail_url, form).status_code == 302
    assert Skill.objects.get(pk=skill.pk).title == "Tile rows by 128"
    by_meaning = client.get(reverse("knowledge:skill_list"),
                            {"q": "rows per program for layer norm", "mode": "meaning"})
    assert "Tile rows by 128" in by_meaning.content.decode()
    assert client.post(reverse("knowledge:skill_retire", args=[skill.pk])).status_code == 302
    assert Skill.objects.get(pk=skill.pk).retired
    assert "Tile rows by 128" not in client.get(reverse("knowledge:skill_list")).content.decode()
    with_retired = client.get(reverse("knowledge:skill_list"), {"retired": "1"}).content.decode()
    assert "Tile rows by 128" in with_retired and "(retired)" in with_retired
