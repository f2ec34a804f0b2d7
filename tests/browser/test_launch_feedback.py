"""Issue 32, item 4 in a real browser: launching an offline session never waits behind the
browser's spinner for the coverage analysis. The session page opens at once and says what it
waits on; the check's end moves it on, or ends it with the reason."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

UNCOVERED = (Path(__file__).parents[1] / "sorter_problem.py").read_bytes()


def launch(page, server, budget: int = 1) -> int:
    page.select_option("#id_hardware", label="Interpreter (CPU)")
    page.select_option("#id_synthesizer", "offline")
    page.fill("#id_budget_evaluations", str(budget))
    page.click("#launch")
    page.wait_for_url(re.compile(r".*/sessions/\d+/$"), timeout=60_000)
    return int(page.url.rstrip("/").rsplit("/", 1)[1])


def test_launch_opens_the_session_which_says_it_checks_the_problem(
        page, live_server_process, login):
    server = live_server_process
    name = f"never-checked-{uuid.uuid4().hex[:6]}"
    server.command("create_problem", name=name, asked=True)  # only the session's loop checks it
    login(page, "alpha-engineer", "pw-engineer")
    page.goto(server.url + "/sessions/new/")
    page.select_option("#id_problem", label=name)
    launch(page, server)
    # What it waited on is in the event log (stored, so shown whatever the timing) ...
    page.wait_for_function("[...document.querySelectorAll('#event-log li')].some(li => "
                           "li.innerText.includes('checking whether the offline synthesizer'))")
    # ... and once the check answered, the page moves on by itself: no banner, the answer.
    page.wait_for_function("document.getElementById('status-message').innerText"
                           ".match(/problem checked|started|budget|evaluat/)", timeout=180_000)
    assert page.locator("#checking-problem").count() == 0
    assert not page.errors


def test_an_uncovered_upload_ends_its_session_with_the_reason(page, live_server_process, login):
    server = live_server_process
    login(page, "alpha-engineer", "pw-engineer")
    page.goto(server.url + "/sessions/new/")
    page.set_input_files("#id_problem_file", files=[
        {"name": "sorter.py", "mimeType": "text/x-python", "buffer": UNCOVERED}])
    page.fill("input[name=problem_name]", f"sorter-{uuid.uuid4().hex[:6]}")
    launch(page, server)
    page.wait_for_selector("#session-status[data-status=failed]", timeout=180_000)
    message = page.inner_text("#status-message")
    assert "offline synthesizer does not cover this problem" in message
    assert "sort" in message and "LLM synthesizer" in message
    assert page.locator("#checking-problem").count() == 0
    assert not page.errors
