"""Issue 32, item 3 in a real browser: an uploaded problem whose forward always raises is
refused with a clear message on the form, and is neither stored nor listed."""

from __future__ import annotations

BROKEN = b"""import torch
class Model(torch.nn.Module):
    def forward(self, x):
        raise ValueError("this reference is broken on purpose")
def get_inputs():
    return [torch.randn(4, 4)]
def get_init_inputs():
    return []
"""


def test_a_broken_problem_is_refused_clearly_and_not_stored(page, live_server_process, login):
    server = live_server_process
    login(page, "alpha-engineer", "pw-engineer")
    page.goto(server.url + "/sessions/new/")
    page.set_input_files("#id_problem_file", files=[
        {"name": "broken.py", "mimeType": "text/x-python", "buffer": BROKEN}])
    page.fill("input[name=problem_name]", "always-raises")
    page.click("#launch")
    page.wait_for_selector("#upload-error", timeout=60_000)
    error = page.inner_text("#upload-error")
    assert "forward" in error and "this reference is broken on purpose" in error
    assert "validated and stored" not in page.inner_text("body")
    page.goto(server.url + "/problems/")
    assert "always-raises" not in page.inner_text("main")
    assert "tiny-relu" in page.inner_text("main")  # the stored problem is still there
    assert not page.errors
