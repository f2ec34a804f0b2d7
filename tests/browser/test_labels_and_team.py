"""Issue 32, item 10 in a real browser: team admins manage members in the app, the audit
trail speaks words, an API key shown once has a copy button, and the live page names
cancelled nodes in its legend and logs evaluations without "unknown"."""

from __future__ import annotations


def test_admin_manages_members_and_the_audit_reads_in_words(page, live_server_process, login):
    server = live_server_process
    login(page, "alpha-admin", "pw-admin")
    page.goto(server.url + "/teams/")
    page.click("a.manage-members")
    page.fill("#member-form input[name=username]", "beta-viewer")
    page.select_option("#member-form select[name=role]", "reviewer")
    page.click("#member-form button[type=submit]")
    page.wait_for_selector("#member-beta-viewer")
    assert page.inner_text("#member-beta-viewer .role") == "Reviewer"
    page.goto(server.url + "/review/audit/")
    audit = page.inner_text("#audit")
    assert "added beta-viewer to the team as reviewer" in audit
    assert "membership_role_changed" not in audit
    assert not page.errors


def test_a_new_api_key_is_copied_with_one_click(page, live_server_process, login):
    server = live_server_process
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    login(page, "alpha-admin", "pw-admin")
    page.goto(server.url + "/teams/alpha/api-keys/")
    page.fill("#create-key input[name=name]", "Power BI")
    page.click("#create-key button[type=submit]")
    page.wait_for_selector("#raw-key")
    page.click("#copy-key")
    page.wait_for_function("document.getElementById('copy-key').textContent === 'Copied'")
    assert page.evaluate("navigator.clipboard.readText()") == page.inner_text("#raw-key")


def test_live_page_names_cancelled_nodes_and_logs_in_words(page, live_server_process, login):
    server = live_server_process
    pk = server.command("create_session", hardware="h200")["session"]
    login(page, "alpha-viewer", "pw-viewer")
    page.goto(f"{server.url}/sessions/{pk}/")
    page.wait_for_selector("#connection[data-state=live]")
    assert "cancelled (never evaluated)" in page.inner_text(".legend")
    server.command("publish", session=pk, events=[
        ["node_created", {"node_id": "0", "parent_node_id": None, "depth": 0,
                          "status": "reference"}],
        ["node_evaluated", {"node_id": "1", "parent_node_id": "0", "depth": 1,
                            "status": "correct", "reward": 1.5, "bottleneck": "unknown"}]])
    line = page.locator("#event-log li", has_text="candidate 1:")
    line.wait_for(timeout=5000)
    assert "unknown" not in line.inner_text() and "reward 1.5" in line.inner_text()
    assert not page.errors
