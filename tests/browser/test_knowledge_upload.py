"""In a real browser against a real server: upload a PDF manual, watch it being indexed
(htmx polls the progress fragment), then find a passage by asking a question."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MANUAL = REPO.parent / "shared" / "corpus" / "rocm-docs" / "mi300.pdf"

pytestmark = pytest.mark.skipif(not MANUAL.is_file(), reason=f"the corpus PDF is not at {MANUAL}")


def test_upload_watch_progress_and_search(page, login, live_server_process):
    from playwright.sync_api import expect

    url = live_server_process.url
    login(page, "alpha-engineer", "pw-engineer")
    page.goto(url + "/knowledge/")
    form = page.locator("#kb-upload-form")
    form.locator("input[type=file]").set_input_files(str(MANUAL))
    form.locator("[name=vendor]").fill("amd")
    form.locator("[name=hardware]").fill("mi300x, gfx942")
    form.locator("[name=category]").select_option("hardware-specific")
    form.locator("button[type=submit]").click()
    page.wait_for_url("**/knowledge/documents/*/")
    progress = page.locator("#kb-progress")
    # The fragment replaces itself every second until indexing ends.
    expect(progress).to_contain_text("Ready", timeout=180_000)
    expect(progress).to_contain_text("100%")
    expect(progress).to_contain_text("4 pages")
    page.goto(url + "/knowledge/search/?q=How+many+compute+units+does+one+MI300+XCD+have"
              "&hardware=mi300x")
    results = page.locator("#kb-results")
    expect(results).to_contain_text("38 active CUs")
    expect(results).to_contain_text("p. 1")
    assert not page.errors, page.errors
