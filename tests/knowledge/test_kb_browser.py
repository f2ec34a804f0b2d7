"""In a real browser against a real server: upload a PDF manual, watch it being indexed
(htmx polls the progress fragment), then find a passage by asking a question."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
MANUAL = REPO.parent / "shared" / "corpus" / "rocm-docs" / "mi300.pdf"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no chromium at {CHROMIUM}"),
    pytest.mark.skipif(importlib.util.find_spec("playwright") is None, reason="playwright missing"),
    pytest.mark.skipif(not MANUAL.is_file(), reason=f"the corpus PDF is not at {MANUAL}"),
]


@pytest.fixture(scope="module")
def server():
    spec = importlib.util.spec_from_file_location("kb_liveserver", REPO / "tests" / "browser" / "liveserver.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with module.LiveServer() as live:
        yield live


def test_upload_watch_progress_and_search(server):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM,
                                             args=["--no-sandbox", "--headless", "--disable-gpu"])
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(server.url + "/accounts/login/")
        page.fill("#id_username", "alpha-engineer")
        page.fill("#id_password", "pw-engineer")
        page.click("#login-submit")
        page.wait_for_url(server.url + "/")
        page.goto(server.url + "/knowledge/")
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
        page.goto(server.url + "/knowledge/search/?q=How+many+compute+units+does+one+MI300+XCD+have"
                  "&hardware=mi300x")
        results = page.locator("#kb-results")
        expect(results).to_contain_text("38 active CUs")
        expect(results).to_contain_text("p. 1")
        assert not errors, errors
        browser.close()
