"""Issue 32, item 4 in a real browser: launching an offline session never waits behind the
browser's spinner for the coverage analysis. The session page opens at once and says what it
waits on; the check's end moves it on, or ends it with the reason."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

UNCOVERED = (Path(__file__).parents[1] / "sorter_problem.py").read_bytes()


def fill_form(page, budget: int = 1) -> None:
    page.select_option("#id_hardware", label="Interpreter (CPU)")
    page.select_option("#id_synthesizer", "offline")
    page.fill("#id_budget_evaluations", str(budget))


def launch(page, server, budget: int = 1) -> int:
    fill_form(page, budget)
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
    fill_form(page)
    # While the upload is checked in the sandbox the form says so: what the user saw at the
    # submit is kept in sessionStorage (read after the navigation, whatever the speed).
    page.evaluate("""document.getElementById('session-form').addEventListener('submit', () => {
        const note = document.getElementById('launch-progress');
        const button = document.getElementById('launch');
        sessionStorage.setItem('seen', JSON.stringify({hidden: note.hidden,
            note: note.textContent, disabled: button.disabled, label: button.textContent}));
    })""")
    page.click("#launch")
    page.wait_for_url(re.compile(r".*/sessions/\d+/$"), timeout=60_000)
    seen = page.evaluate("JSON.parse(sessionStorage.getItem('seen'))")
    assert seen["hidden"] is False and seen["disabled"] is True
    assert "Checking the uploaded problem in the sandbox" in seen["note"]
    assert seen["label"] == "Launching…"
    page.wait_for_selector("#session-status[data-status=failed]", timeout=180_000)
    message = page.inner_text("#status-message")
    assert "offline synthesizer does not cover this problem" in message
    assert "sort" in message and "LLM synthesizer" in message
    assert page.locator("#checking-problem").count() == 0
    assert not page.errors
