"""Issue 32, item 7 in a real browser: search labels come from an absolute similarity, so a
question no document answers gets no "strong match" and says so; opening a result lands on
its passage, open and highlighted."""

from __future__ import annotations

from tests.browser.conftest import upload_document

MANUAL = ("# Shared memory\n\nShared memory bank conflicts serialize accesses. Pad the tile by "
          "one column to avoid shared memory bank conflicts on the H200.\n\n"
          "## Coalescing\n\nAdjacent threads should read adjacent addresses so that global "
          "memory loads coalesce into few transactions.\n")


def test_search_labels_are_calibrated_and_results_open_on_the_passage(
        page, live_server_process, login, tmp_path):
    server = live_server_process
    manual = tmp_path / "smem.md"
    manual.write_text(MANUAL)
    login(page, "alpha-engineer", "pw-engineer")
    upload_document(page, server.url, manual)
    page.wait_for_selector("#kb-document[data-status=ready]", timeout=180_000)

    page.goto(server.url + "/knowledge/search/?q=how+to+avoid+shared+memory+bank+conflicts")
    first = page.locator(".kb-result").first
    assert "strong match" in first.inner_text()
    assert not page.is_visible("#kb-weak-hint")
    first.locator("a.kb-open").click()
    page.wait_for_url("**/knowledge/documents/*/?chunk=*#chunk-*")
    target = page.locator("details.kb-target")
    assert target.count() == 1 and target.get_attribute("open") is not None
    assert "bank conflicts" in target.inner_text()
    assert page.evaluate("location.hash") == "#" + target.get_attribute("id")

    page.goto(server.url + "/knowledge/search/?q=recipe+for+a+chocolate+birthday+cake")
    results = page.locator(".kb-result")
    if results.count():
        assert "strong match" not in page.inner_text("#kb-results")
        assert "No passage answers this well" in page.inner_text("#kb-weak-hint")
    assert not page.errors
