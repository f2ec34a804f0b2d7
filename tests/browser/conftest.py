"""Browser fixtures: a real KernelHub server process and Debian's chromium via Playwright."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
HERE = Path(__file__).resolve().parent


def load_liveserver():
    spec = importlib.util.spec_from_file_location("kernelhub_liveserver", HERE / "liveserver.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pytest_collection_modifyitems(config, items):
    reason = None
    if not os.path.exists(CHROMIUM):
        reason = f"Debian's chromium is not installed at {CHROMIUM} (apt-get install chromium)"
    elif importlib.util.find_spec("playwright") is None:
        reason = "playwright is not installed"
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def live_server_process():
    with load_liveserver().LiveServer() as server:
        yield server


@pytest.fixture(scope="session")
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium):
    context = chromium.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    yield page
    context.close()


@pytest.fixture
def screenshot_dir() -> Path | None:
    """Set KERNELHUB_SCREENSHOT_DIR (e.g. docs/screenshots) to keep the screenshots."""
    value = os.environ.get("KERNELHUB_SCREENSHOT_DIR")
    if not value:
        return None
    path = Path(value)
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def login(live_server_process):
    """login(page, "alpha-engineer", "pw-engineer") through the real login form."""

    def log_in(page, username: str, password: str) -> None:
        page.context.clear_cookies()
        page.goto(live_server_process.url + "/accounts/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", password)
        page.click("#login-submit")
        page.wait_for_url(live_server_process.url + "/")

    return log_in


def upload_document(page, server_url: str, path, hardware: str = "h200",
                    category: str = "general-optimization") -> None:
    """Upload a manual through the knowledge page's form; lands on the document's page."""
    page.goto(server_url + "/knowledge/")
    form = page.locator("#kb-upload-form")
    form.locator("input[type=file]").set_input_files(str(path))
    form.locator("[name=hardware]").fill(hardware)
    form.locator("[name=category]").select_option(category)
    form.locator("button[type=submit]").click()
    page.wait_for_url("**/knowledge/documents/*/")
