"""Issue 29 in a real browser: the launch form's screening fields (a bad value is refused
with a clear error), a session launched with screening on the interpreter, and its page
counting screened and fully evaluated candidates live. The real runner, search engine and
sandboxed screening and evaluations run it."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

PROBLEM = (Path(__file__).parents[1] / "tiny_problem.py").read_bytes()
BUDGET, SCREEN, FINALISTS = 2, 2, 1


@pytest.mark.slow
def test_launch_with_screening_and_see_the_counts(page, live_server_process, login):
    server = live_server_process
    login(page, "alpha-engineer", "pw-engineer")
    page.goto(server.url + "/sessions/new/")
    assert "Only the fastest (the finalists) get the full evaluation" in page.inner_text(
        "#screen-help")
    name = f"screen-relu-{uuid.uuid4().hex[:6]}"

    def fill(finalists: int) -> None:
        page.set_input_files("#id_problem_file", files=[
            {"name": f"{name}.py", "mimeType": "text/x-python", "buffer": PROBLEM}])
        page.fill("#id_problem_name", name)
        page.select_option("#id_hardware", label="Interpreter (CPU)")
        page.select_option("#id_synthesizer", "offline")
        page.fill("#id_budget_evaluations", str(BUDGET))
        page.fill("#id_budget_minutes", "10")
        page.fill("#id_screen", str(SCREEN))
        page.fill("#id_screen_finalists", str(finalists))

    fill(finalists=SCREEN + 1)  # more finalists than configurations: refused, nothing stored
    page.click("#launch")
    page.wait_for_selector("#screen_finalists-error", timeout=120_000)
    assert "cannot exceed the configurations screened" in page.inner_text(
        "#screen_finalists-error")
    assert page.input_value("#id_screen") == str(SCREEN)  # what the user typed is kept

    fill(finalists=FINALISTS)
    page.click("#launch")
    page.wait_for_url(re.compile(r".*/sessions/\d+/$"), timeout=120_000)
    page.wait_for_selector("#session-status[data-status=finished]", timeout=540_000)
    page.wait_for_function(
        f"Number(document.getElementById('screened-n').textContent) >= {SCREEN} && "
        f"Number(document.getElementById('evaluated-n').textContent) >= 1", timeout=20_000)
    # the counts the page streamed are the stored ones
    page.reload()
    screened = int(page.inner_text("#screened-n"))
    evaluated = int(page.inner_text("#evaluated-n"))
    assert screened >= SCREEN and 1 <= evaluated <= BUDGET, (screened, evaluated)
    assert not page.errors
