"""The whole day in a real browser: an engineer uploads a problem and launches an offline
session on the interpreter target, watches the tree grow to the budget without reloading,
opens a candidate and its diff; a reviewer approves the best kernel and finds it among the
approved kernels. Uses the real runner, search engine and sandboxed evaluations."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

BUDGET = 3
PROBLEM = (Path(__file__).parents[1] / "tiny_problem.py").read_bytes()


@pytest.mark.slow
def test_launch_watch_review_approve(page, live_server_process, login, screenshot_dir):
    server = live_server_process
    login(page, "alpha-engineer", "pw-engineer")
    page.goto(server.url + "/sessions/new/")
    name = f"e2e-relu-{uuid.uuid4().hex[:6]}"
    page.set_input_files("#id_problem_file", files=[
        {"name": f"{name}.py", "mimeType": "text/x-python", "buffer": PROBLEM}])
    page.fill("#id_problem_name", name)
    page.select_option("#id_hardware", label="Interpreter (CPU)")
    page.select_option("#id_synthesizer", "offline")
    page.fill("#id_budget_evaluations", str(BUDGET))
    page.fill("#id_budget_minutes", "10")
    page.click("#launch")
    page.wait_for_url(re.compile(r".*/sessions/\d+/$"), timeout=120_000)
    session_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
    page.evaluate("window.notReloaded = true")

    # The tree grows live, up to the budget, and the session finishes — no reload.
    page.wait_for_selector("#session-status[data-status=finished]", timeout=540_000)
    page.wait_for_function(f"window.kernelhubLive.state.evaluated >= {BUDGET}", timeout=10_000)
    assert page.evaluate("window.notReloaded") is True
    page.wait_for_function("document.getElementById('progress-text').textContent === "
                           f"'{BUDGET} / {BUDGET} evaluations'", timeout=10_000)
    assert page.evaluate("window.kernelhubLive.state.order.length") >= BUDGET + 1  # + the root
    page.wait_for_selector("#diag-body:not([hidden])", timeout=10_000)
    assert page.locator("#event-log li").count() >= 2 * BUDGET
    if screenshot_dir:
        page.screenshot(path=str(screenshot_dir / "live_session.png"), full_page=True)

    # Open the best candidate from the diagnostics panel: source, diff, evaluation. The wait
    # is armed before the click, and as long as the launch's: right after the session ends
    # the server is still storing its lessons, and on a box loaded by the other test
    # workers the candidate page once took longer than Playwright's 30 s default.
    with page.expect_navigation(url=re.compile(r".*/sessions/candidates/\d+/$"),
                                timeout=120_000):
        page.click("#diag-open")
    assert page.locator("#source .highlight").count() >= 1
    assert "ModelNew" in page.inner_text("#source")
    assert page.locator("#diff .highlight").count() == 1 or "Identical" in page.inner_text("#diff")
    assert page.inner_text("#candidate-status") == "correct"
    node_id = page.inner_text("#candidate-node").split()[1]
    if screenshot_dir:
        page.screenshot(path=str(screenshot_dir / "candidate.png"), full_page=True)

    # The session proposed its best kernel; a reviewer approves it.
    login(page, "alpha-reviewer", "pw-reviewer")
    page.goto(server.url + "/review/")
    item = page.locator(".review-item", has=page.locator(
        f"a[href='/sessions/{session_id}/']"))
    assert item.count() == 1
    item.locator("textarea[name$='-comment']").fill("correct on every trial; ship it")
    item.locator("button.approve").click()
    page.wait_for_url(server.url + "/review/approved/")
    row = page.locator("#approved-kernels tr", has_text=name)
    assert row.count() == 1
    assert "alpha-reviewer" in row.inner_text() and node_id in row.inner_text()

    page.goto(server.url + "/")
    assert name in page.inner_text("#approved-kernels")
    assert name in page.inner_text("#finished-sessions")
    if screenshot_dir:
        page.screenshot(path=str(screenshot_dir / "dashboard.png"), full_page=True)
    assert not page.errors
