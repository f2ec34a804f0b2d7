"""Issue 32, item 9 in a real browser: the server as `make run` starts it with no variable
set shows no debug page — a missing page is a plain 404 — and its pages are styled."""

from __future__ import annotations

import pytest

from tests.browser.conftest import load_liveserver


@pytest.fixture(scope="module")
def default_server():
    # No DEBUG variable at all, as `make run` on a fresh checkout.
    with load_liveserver().LiveServer(env={"DEBUG": ""}) as server:
        yield server


@pytest.mark.parametrize("path", ["/api/v1/", "/no-such-page/"])
def test_a_missing_page_is_a_plain_404_without_debug_details(page, default_server, path):
    response = page.goto(default_server.url + path)
    assert response.status == 404
    text = page.inner_text("body")
    for debug_marker in ("URLconf", "DEBUG = True", "Using the URLconf", "Traceback"):
        assert debug_marker not in text
    if not path.startswith("/api/"):
        assert page.locator("#error-page").count() == 1  # the site's own page


def test_login_page_is_served_styled_over_plain_http(page, default_server):
    response = page.goto(default_server.url + "/accounts/login/")
    assert response.status == 200 and response.url.startswith("http://")  # no HTTPS redirect
    color = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert color not in ("rgba(0, 0, 0, 0)", "rgb(255, 255, 255)")  # kernelhub.css applied
    page.fill("#id_username", "alpha-viewer")
    page.fill("#id_password", "pw-viewer")
    page.click("#login-submit")
    page.wait_for_url(default_server.url + "/")  # the session cookie works without HTTPS
