"""The live session page in a real browser, with events published inside the server process
(as the runner does): replay on open, live growth without reloading, dedup by seq,
reconnect and catch-up, roles."""

from __future__ import annotations

import pytest


def node(i: int, parent: int | None, status: str = "correct", **extra) -> dict:
    return {"node_id": str(i), "parent_node_id": None if parent is None else str(parent),
            "depth": 0 if parent is None else extra.pop("depth", 1), "status": status,
            "reward": i / 10, "speedup_vs_eager": 1 + i / 10, "speedup_vs_compile": 1 + i / 20,
            "bottleneck": "memory-bound", "evaluated": i, "budget": 12, **extra}


def tree_size(page) -> int:
    return page.evaluate("window.kernelhubLive.state.order.length")


def test_page_replays_then_streams_and_catches_up_after_a_drop(page, live_server_process, login):
    server = live_server_process
    pk = server.command("create_session", hardware="h200", budget=12)["session"]
    server.command("publish", session=pk, events=[
        ["status_changed", {"status": "running"}],
        ["node_created", node(0, None, status="reference")],
        ["node_evaluated", node(1, 0)], ["node_evaluated", node(2, 0, status="incorrect")]])

    login(page, "alpha-viewer", "pw-viewer")
    page.goto(f"{server.url}/sessions/{pk}/")
    page.evaluate("window.notReloaded = true")
    page.wait_for_function("window.kernelhubLive.state.order.length === 3", timeout=10000)
    assert page.locator("#btn-pause").count() == 0  # viewers get no controls
    page.wait_for_selector("#connection[data-state=live]")

    # Live: nodes appear without reloading.
    server.command("publish", session=pk, events=[
        ["node_evaluated", node(i, 1, depth=2)] for i in range(3, 7)])
    page.wait_for_function("window.kernelhubLive.state.order.length === 7", timeout=5000)
    page.wait_for_function(  # the DOM follows on the next animation frame
        "document.getElementById('progress-text').textContent === '6 / 12 evaluations'",
        timeout=5000)

    # Drop the socket, publish while it is down: the page reconnects with ?after= and
    # receives exactly what it missed.
    page.evaluate("window.kernelhubLive.dropConnection()")
    page.wait_for_selector("#connection:not([data-state=live])", timeout=3000)
    server.command("publish", session=pk, events=[
        ["node_evaluated", node(i, 2, depth=2, status="hack_suspected")] for i in range(7, 10)]
        + [["best_improved", {"node_id": "6", "reward": 0.6, "speedup_vs_eager": 1.6,
                              "speedup_vs_compile": 1.3}]])
    page.wait_for_function("window.kernelhubLive.state.order.length === 10", timeout=15000)
    page.wait_for_selector("#connection[data-state=live]")
    assert page.evaluate("window.notReloaded") is True
    assert page.evaluate("window.kernelhubLive.state.lastSeq") == 12
    log_seqs = page.eval_on_selector_all("#event-log .seq", "els => els.map(e => e.textContent)")
    assert sorted(log_seqs, key=lambda s: int(s[1:])) == [f"#{i}" for i in range(1, 13)]
    page.wait_for_function("document.getElementById('best-eager').textContent === '1.6×'")
    # Best path: root → 1 → 6 is drawn in the highlight trace.
    best_path_points = page.evaluate(
        "document.getElementById('tree-plot').data[1].x.filter(v => v !== null).length")
    assert best_path_points == 3  # nodes 6, 1 and the root
    assert not page.errors


def test_live_advantages_follow_the_siblings_like_a_reload(page, live_server_process, login):
    """A sibling's result changes the earlier node's leave-one-out advantage: the live tree
    takes it from the event, as the stored rows (and so a reload) already do."""
    server = live_server_process
    pk = server.command("create_session", hardware="h200", budget=4)["session"]
    server.command("publish", session=pk, events=[
        ["node_created", node(0, None, status="reference")],
        ["node_evaluated", node(1, 0, advantage=1.5, advantages={"1": 1.5})]])
    login(page, "alpha-viewer", "pw-viewer")
    page.goto(f"{server.url}/sessions/{pk}/")
    page.wait_for_selector("#connection[data-state=live]")
    live = "window.kernelhubLive.state.nodes.get('1').advantage"
    assert page.evaluate(live) == 1.5
    server.command("publish", session=pk, events=[
        ["node_evaluated", node(2, 0, advantage=-0.75, advantages={"1": 0.75, "2": -0.75})]])
    page.wait_for_function(f"{live} === 0.75", timeout=5000)
    page.reload()
    page.wait_for_selector("#connection[data-state=live]")
    assert page.evaluate(live) == 0.75
    assert page.evaluate("window.kernelhubLive.state.nodes.get('2').advantage") == -0.75
    assert not page.errors


def test_engineer_pauses_from_the_page(page, live_server_process, login):
    server = live_server_process
    pk = server.command("create_session", budget=5)["session"]
    login(page, "alpha-engineer", "pw-engineer")
    page.goto(f"{server.url}/sessions/{pk}/")
    page.click("#btn-pause")
    page.wait_for_selector("#btn-resume", timeout=5000)
    assert server.command("session", session=pk)["status"] == "paused"
    # The status change is streamed back to the page too.
    page.wait_for_selector("#session-status[data-status=paused]", timeout=5000)
    assert not page.errors


@pytest.mark.parametrize("username,password", [("beta-admin", "pw-admin")])
def test_other_team_cannot_open_the_page(page, live_server_process, login, username, password):
    server = live_server_process
    pk = server.command("create_session", team="alpha")["session"]
    login(page, username, password)
    response = page.goto(f"{server.url}/sessions/{pk}/")
    assert response.status == 404


def test_diagnostics_panel_draws_the_roofline_under_the_targets_ceilings(page, live_server_process,
                                                                         login):
    server = live_server_process
    pk = server.command("create_session", hardware="h200", budget=4)["session"]
    diagnostics = {
        "bottleneck": {"class": "memory-bound", "reason": "81% of peak bandwidth"},
        "roofline": {"available": True, "arithmetic_intensity": 0.25, "achieved_tflops": 0.87,
                     "achieved_bandwidth_gbs": 3480.0},
        "kernels": [{"name": "fused_rows_kernel", "n_regs": 40, "n_spills": 2,
                     "shared_bytes": 8192, "num_warps": 8, "occupancy": 0.75,
                     "limited_by": "registers"}]}
    cand = server.command("create_candidate", session=pk, node_id="1", status="correct",
                          speedup_vs_eager=2.4, speedup_vs_compile=1.3, reward=0.9,
                          coverage=0.98, diagnostics=diagnostics,
                          timing={"candidate": {"median_ms": 0.042}})["candidate"]
    server.command("publish", session=pk, events=[
        ["status_changed", {"status": "running"}],
        ["node_created", node(0, None, status="reference")],
        ["node_evaluated", node(1, 0, candidate_pk=cand, speedup_vs_eager=2.4)],
        ["best_improved", {"node_id": "1", "candidate_pk": cand, "reward": 0.9,
                           "speedup_vs_eager": 2.4, "speedup_vs_compile": 1.3}]])
    login(page, "alpha-viewer", "pw-viewer")
    page.goto(f"{server.url}/sessions/{pk}/?render=svg")
    page.wait_for_selector("#diag-body:not([hidden])", timeout=10000)
    page.wait_for_function("(document.getElementById('roofline-plot').data || []).length === 3")
    names = page.evaluate("document.getElementById('roofline-plot').data.map(t => t.name)")
    assert names == ["bf16 790 TFLOP/s", "fp32 67 TFLOP/s", "1"]  # H200's ceilings + the node
    point = page.evaluate("document.getElementById('roofline-plot').data[2]")
    assert point["x"] == [0.25] and point["y"] == [0.87]
    table = page.inner_text("#diag-table")
    assert "memory-bound" in table and "98%" in table and "2.4× / 1.3×" in table
    kernels = page.inner_text("#diag-kernels")
    assert "fused_rows_kernel" in kernels and "75% (registers)" in kernels and "8192" in kernels
    assert page.inner_text("#best-eager") == "2.4×"

    # Clicking a node selects it (its diagnostics); clicking it again opens its candidate page.
    def point_center(index: int) -> tuple[float, float]:
        page.wait_for_timeout(300)  # let the layout settle (the panels above just grew)
        point = page.locator("#tree-plot .scatterlayer .trace").nth(2).locator(".point").nth(index)
        box = point.bounding_box()
        return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2

    page.mouse.move(*point_center(0))
    page.wait_for_selector(".hovertext", timeout=5000)  # hover shows the node's summary
    assert "reference" in page.text_content(".hovertext")
    x, y = point_center(1)
    page.mouse.move(x, y)
    page.mouse.click(x, y)
    page.wait_for_selector("#diag-show-best", timeout=5000)
    assert "(selected)" in page.inner_text("#diag-title")
    page.wait_for_timeout(400)  # not a double click
    page.mouse.click(x, y)
    page.wait_for_url(f"{server.url}/sessions/candidates/{cand}/")
    assert not page.errors
