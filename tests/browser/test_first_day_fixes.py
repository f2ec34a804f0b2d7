"""Issue 17 in a real browser: what a first-time user tripped on, fixed — static files
compressed under hashed names, the live badge, interpreter sessions, the candidate page,
approved-kernel downloads, the dashboard's charts and knowledge card, navigation, favicon."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.browser.conftest import upload_document

FITS = """(selector) => [...document.querySelectorAll(selector)].every(card =>
    card.scrollWidth <= card.clientWidth + 1)"""


def node(node_id, parent, **fields):
    return {"node_id": str(node_id), "parent_node_id": None if parent is None else str(parent),
            "depth": 0 if parent is None else 1, "status": "pending", **fields}


@pytest.fixture
def gpu_kernel(live_server_process):
    """A finished H200 session with one timed, approved candidate: (session, candidate, kernel)."""
    server = live_server_process
    pk = server.command("create_session", hardware="h200", status="finished",
                        best_speedup_vs_eager=2.4567)["session"]
    now = dt.datetime.now(dt.timezone.utc).isoformat()
    cand = server.command(
        "create_candidate", session=pk, node_id="1", status="correct", speedup_vs_eager=2.4567,
        speedup_vs_compile=1.234, reward=0.9, coverage=0.98, evaluated_at=now,
        timing={"candidate": {"median_ms": 0.0175, "iqr_ms": 0.0001234, "samples": 30},
                "eager": {"median_ms": 0.043, "samples": 30}},
        origin={"synthesizer": "offline", "transformation": "fuse",
                "params": {f"PARAM_{i}": "value" * 4 for i in range(12)}},
        result={"correctness": [{"trial": i, "seed": i, "max_abs_error": 1.2345678901234567e-07,
                                 "max_rel_error": 3.4567890123456e-05, "rel_norm_error": 0.0,
                                 "passed": True, "note": ""} for i in range(5)]},
        diagnostics={"roofline": {"available": True, "arithmetic_intensity": 0.25,
                                  "achieved_tflops": 0.87}})["candidate"]
    kernel = server.command("approve", candidate=cand)["kernel"]
    return pk, cand, kernel


def test_plotly_is_served_compressed_hashed_and_cached(page, live_server_process, login):
    server = live_server_process
    login(page, "alpha-viewer", "pw-viewer")
    pk = server.command("create_session", hardware="h200")["session"]
    responses = []
    page.on("response", lambda r: responses.append(r) if "plotly" in r.url else None)
    page.goto(f"{server.url}/sessions/{pk}/")
    page.wait_for_function("window.Plotly !== undefined")
    plotly = next(r for r in responses if r.url.endswith(".js"))
    assert plotly.url.rsplit("/", 1)[1].startswith("plotly-charts.min.") and \
        plotly.url.rsplit("/", 1)[1] != "plotly-charts.min.js"  # hashed name
    headers = plotly.all_headers()
    assert headers.get("content-encoding") in ("gzip", "br")
    assert "max-age=315360000" in headers["cache-control"] and "immutable" in headers["cache-control"]
    favicon = page.request.get(server.url + "/favicon.ico")
    assert favicon.ok and "svg" in favicon.headers["content-type"]


def test_live_badge_clears_when_the_session_finishes(page, live_server_process, login):
    server = live_server_process
    pk = server.command("create_session", hardware="h200")["session"]
    login(page, "alpha-viewer", "pw-viewer")
    page.goto(f"{server.url}/sessions/{pk}/")
    page.wait_for_selector("#connection[data-state=live]")
    server.command("publish", session=pk, events=[["status_changed", {"status": "running"}],
                                                  ["status_changed", {"status": "finished"}]])
    page.wait_for_selector("#connection[data-state=ended]", timeout=5000)
    assert page.inner_text("#connection") == "session ended"
    page.wait_for_timeout(3500)  # the socket closes; no reconnect brings "live" back
    assert page.get_attribute("#connection", "data-state") == "ended"
    assert not page.errors


def test_interpreter_session_says_what_it_is(page, live_server_process, login):
    server = live_server_process
    pk = server.command("create_session", hardware="interpreter")["session"]
    cands = [server.command("create_candidate", session=pk, node_id=str(i), status="correct",
                            reward=1.5)["candidate"] for i in (1, 2)]
    server.command("publish", session=pk, events=[
        ["status_changed", {"status": "running"}],
        ["node_created", node(0, None, status="reference")],
        ["node_evaluated", node(1, 0, status="incorrect", reward=0.0)],
        ["node_evaluated", node(2, 0, status="correct", reward=1.5, candidate_pk=cands[1])],
        ["node_evaluated", node(3, 0, status="correct", reward=1.5)],
        ["best_improved", {"node_id": "3", "reward": 1.5}],
        ["status_changed", {"status": "finished"}]])
    login(page, "alpha-viewer", "pw-viewer")
    page.goto(f"{server.url}/sessions/{pk}/?render=svg")
    assert "Correctness check only — timings are not comparable" in page.inner_text(
        "#interpreter-note")
    page.wait_for_function("window.kernelhubLive.state.firstCorrectId === '2'")
    assert page.evaluate("window.kernelhubLive.state.bestNodeId") == "2"
    page.wait_for_function("document.getElementById('best-node').textContent === 'node 2'")
    assert page.locator("#best-plot").count() == 0  # no reward chart
    colors = page.evaluate("document.getElementById('tree-plot').data[2].marker.color")
    assert colors[1] == "#ff6b6b" and colors[2] == "#3ecf8e"  # by status
    page.wait_for_selector("#diag-body:not([hidden])", timeout=10000)
    assert "first correct" in page.inner_text("#diag-title")
    assert page.locator("#roofline-plot").count() == 0 and page.is_visible("#roofline-note")
    assert not page.errors


def test_candidate_page_numbers_and_tables_fit(page, live_server_process, login, gpu_kernel):
    server = live_server_process
    _, cand, _ = gpu_kernel
    login(page, "alpha-viewer", "pw-viewer")
    page.set_viewport_size({"width": 1100, "height": 900})
    page.goto(f"{server.url}/sessions/candidates/{cand}/")
    assert page.inner_text("h1").startswith("tiny-relu · candidate 1 ")
    trials = page.inner_text("#trials")
    assert "1.23e-07" in trials and "1.2345678901234567e-07" not in trials
    assert "17.5 µs" in page.inner_text("#timings") and page.inner_text("#cand-eager") == "2.46×"
    assert page.evaluate(FITS, ".card") and page.evaluate(FITS, ".table-scroll") is not None
    card = page.locator("#profile").bounding_box()
    params = page.locator("#origin-params").bounding_box()
    assert params["x"] + params["width"] <= card["x"] + card["width"] + 1  # params wrap
    page.wait_for_selector("#candidate-roofline[data-drawn]")
    names = page.evaluate("document.getElementById('candidate-roofline').data.map(t => t.name)")
    assert names[2:] == ["candidate 1", "eager PyTorch"]
    assert not page.errors


def test_approved_kernels_list_and_dashboard(page, live_server_process, login, gpu_kernel):
    server = live_server_process
    _, cand, kernel = gpu_kernel
    login(page, "alpha-viewer", "pw-viewer")
    page.goto(server.url + "/review/approved/")
    row = page.locator("#approved-kernels tbody tr", has=page.locator(f"a[href$='/{cand}/']"))
    assert row.locator(".kernel-id").inner_text().startswith(f"#{kernel}")
    with page.expect_download() as module:
        row.locator("a.download-module").click()
    assert module.value.suggested_filename.endswith(f"_kernel_{kernel}.py")
    with page.expect_download() as bundle:
        row.locator("a.download-bundle").click()
    assert bundle.value.suggested_filename == f"kernelhub-kernel-{kernel}.zip"

    page.goto(server.url + "/")
    for chart in ("chart-approved", "chart-evaluations", "chart-best"):
        page.wait_for_selector(f"#{chart}[data-drawn]", timeout=10000)
    # Tables wrap, or scroll inside their card: never past the page, never clipped.
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert page.evaluate("""[...document.querySelectorAll('.card td, .card th')].every(
        c => getComputedStyle(c).textOverflow !== 'ellipsis')""")
    for link in ("nav-problems", "nav-sessions", "nav-kernels", "nav-review", "nav-knowledge",
                 "nav-skills", "nav-teams"):
        href = page.get_attribute(f"#{link}", "href")
        assert page.request.get(server.url + href).ok, href
    page.click("#nav-problems")
    page.wait_for_url(server.url + "/problems/")
    page.click("#problems a >> text=tiny-relu")
    page.wait_for_selector("#problem-sessions")
    assert not page.errors


def test_empty_states_and_knowledge_card(page, live_server_process, login):
    server = live_server_process
    login(page, "beta-viewer", "pw-viewer")  # beta has nothing approved
    page.goto(server.url + "/")
    assert page.is_visible("#chart-approved-empty")
    assert "0 documents" in page.inner_text("#knowledge-counts")
    page.goto(server.url + "/review/approved/")
    assert page.is_visible(".empty-state")
    page.goto(server.url + "/knowledge/skills/")
    text = page.inner_text("#skills-empty")
    assert "distilled when a search session finishes" not in text and "adds none" in text
    assert not page.errors


def test_document_page_turns_ready_without_reload_and_search_hints_weak_matches(
        page, live_server_process, login, tmp_path):
    from playwright.sync_api import expect

    server = live_server_process
    manual = tmp_path / "smem.md"
    manual.write_text("# Shared memory\n\nShared memory bank conflicts serialize accesses. "
                      "Pad the tile by one column to avoid bank conflicts on H200.\n\n"
                      "## Coalescing\n\nAdjacent threads should read adjacent addresses.\n")
    login(page, "alpha-engineer", "pw-engineer")
    upload_document(page, server.url, manual)
    page.evaluate("window.notReloaded = true")
    try:
        page.wait_for_selector("#kb-document[data-status=ready]", timeout=180_000)
    except Exception:
        raise AssertionError(page.inner_text("main")[:600] + server.server_log()[-1500:])
    expect(page.locator("#kb-chunks")).to_be_visible()
    expect(page.locator("button.danger")).to_be_visible()
    assert page.evaluate("window.notReloaded") is True
    assert "indexing has started" not in page.inner_text("main")

    page.goto(server.url + "/knowledge/search/?q=shared+memory+bank+conflicts")
    assert "% · " in page.inner_text(".kb-relevance")  # relevance in words, not "0.0164"
    page.goto(server.url + "/knowledge/search/?q=zebra+violin+xylophone")
    if page.locator(".kb-result").count():
        assert page.is_visible("#kb-weak-hint")
    page.goto(server.url + "/")
    assert "0 documents" not in page.inner_text("#knowledge-counts")
    assert not page.errors
