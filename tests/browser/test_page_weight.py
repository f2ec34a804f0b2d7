"""Issue 32 item 8 in a real browser: the pages draw their charts (data, axes, hover) with
Plotly bundles of only the trace types they use, never the full 4.8 MB plotly.min.js; the live
session page picks the WebGL build only where its tree is drawn with WebGL."""

from __future__ import annotations

import datetime as dt

import pytest

FULL_BUNDLE_BYTES = 4_000_000  # plotly.min.js of the plotly package: 4.8 MB
CHARTS_BUNDLE = "/static/vendor/plotly/plotly-charts.min."
GL_BUNDLE = "/static/vendor/plotly/plotly-charts-gl.min."

# What a figure shows once drawn: its marks (bars, markers), its axis titles and tick labels.
DRAWN = """(id) => {
  const gd = document.getElementById(id);
  const text = (sel) => [...gd.querySelectorAll(sel)].map(e => e.textContent);
  return {
    traces: gd._fullData.map(t => ({type: t.type, visible: t.visible, name: t.name})),
    data: gd.data.map(t => ({x: t.x, y: t.y})),
    // a bar with a height (a missing value draws an empty one)
    bars: [...gd.querySelectorAll('.barlayer .point path')]
      .filter(p => p.getBBox().height > 0).length,
    markers: gd.querySelectorAll('.scatterlayer .points path').length,
    xtitle: text('.xtitle').join(''), ytitle: text('.ytitle').join(''),
    yticks: text('.ytick text').length,
  };
}"""


def embedded_figure(page, chart_id: str) -> dict:
    return page.evaluate(
        "(id) => JSON.parse(document.getElementById(id + '-data').textContent)", chart_id)


def hover_text(page, selector: str) -> str:
    """Moves the mouse over a drawn mark, as a user does, and reads Plotly's hover label."""
    box = page.locator(selector).first.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_selector(".hoverlayer .hovertext", timeout=5000)
    return page.evaluate("""[...document.querySelectorAll('.hoverlayer .hovertext')]
        .map(e => e.textContent).join(' ')""")


def script_responses(page) -> list:
    scripts: list = []
    page.on("response",
            lambda r: scripts.append(r) if r.request.resource_type == "script" else None)
    return scripts


def assert_only_partial_plotly(scripts, expected: str) -> None:
    plotly = [r for r in scripts if "plotly" in r.url]
    assert [r.url.split("/static/")[1].split(".min.")[0] for r in plotly] == \
        [expected.split("/static/")[1].split(".min.")[0]], [r.url for r in plotly]
    assert "plotly.min." not in plotly[0].url  # not the package's full bundle
    assert len(plotly[0].body()) < FULL_BUNDLE_BYTES


@pytest.fixture(scope="module")
def timed_kernel(live_server_process):
    """A finished H200 session: a reference, two timed candidates, the best approved."""
    server = live_server_process
    # A chart group of its own (best per hardware, family and precision): other tests of the
    # same server approve faster kernels in the strict group.
    pk = server.command("create_session", hardware="h200", status="finished",
                        best_speedup_vs_eager=3.21, precision_policy="tf32")["session"]
    now = dt.datetime.now(dt.timezone.utc)
    root = server.command("create_candidate", session=pk, node_id="0", status="reference")
    first = server.command(
        "create_candidate", session=pk, node_id="1", parent_id=root["candidate"], depth=1,
        status="correct", speedup_vs_eager=1.5, speedup_vs_compile=1.1, reward=0.5,
        evaluated_at=(now - dt.timedelta(minutes=5)).isoformat())["candidate"]
    best = server.command(
        "create_candidate", session=pk, node_id="2", parent_id=first, depth=2, status="correct",
        speedup_vs_eager=3.21, speedup_vs_compile=1.75, reward=0.9, evaluated_at=now.isoformat(),
        timing={"candidate": {"median_ms": 0.02, "iqr_ms": 0.001, "samples": 30},
                "eager": {"median_ms": 0.0642, "samples": 30}},
        diagnostics={"roofline": {"available": True, "arithmetic_intensity": 0.5,
                                  "achieved_tflops": 1.5}})["candidate"]
    server.command("approve", candidate=best)
    return pk, best


def test_dashboard_charts_draw_their_data_with_the_partial_bundle(
        page, live_server_process, login, timed_kernel):
    server = live_server_process
    login(page, "alpha-viewer", "pw-viewer")
    scripts = script_responses(page)
    page.goto(server.url + "/")
    for chart in ("chart-approved", "chart-evaluations", "chart-best"):
        page.wait_for_selector(f"#{chart}[data-drawn]", timeout=15000)
        drawn = page.evaluate(DRAWN, chart)
        figure = embedded_figure(page, chart)
        assert [t["type"] for t in drawn["traces"]] == [t["type"] for t in figure["data"]]
        assert all(t["visible"] is True for t in drawn["traces"])  # every type is registered
        assert [t["y"] for t in drawn["data"]] == [t["y"] for t in figure["data"]]
        assert drawn["ytitle"] == figure["layout"]["yaxis"]["title"]["text"]
        assert drawn["yticks"] > 1
        marks = drawn["bars"] if figure["data"][0]["type"] == "bar" else drawn["markers"]
        assert marks == sum(v is not None and v != 0 for t in figure["data"] for v in t["y"]), chart
    approved = embedded_figure(page, "chart-approved")["data"]
    assert 3.21 in approved[0]["y"] and 1.75 in approved[1]["y"]  # our kernel's best
    index = approved[0]["y"].index(3.21)
    bar = f".point:nth-child({index + 1}) path"
    label = hover_text(page, f"#chart-approved .barlayer .trace:nth-child(1) {bar}")
    assert "3.21× over eager" in label
    assert_only_partial_plotly(scripts, CHARTS_BUNDLE)
    assert not page.errors


def test_candidate_and_problem_charts_draw_their_points(
        page, live_server_process, login, timed_kernel):
    server = live_server_process
    session_pk, best = timed_kernel
    login(page, "alpha-viewer", "pw-viewer")
    scripts = script_responses(page)
    page.goto(f"{server.url}/sessions/candidates/{best}/")
    page.wait_for_selector("#candidate-roofline[data-drawn]", timeout=15000)
    drawn = page.evaluate(DRAWN, "candidate-roofline")
    assert drawn["xtitle"] == "arithmetic intensity (FLOP/byte)" and drawn["ytitle"] == "TFLOP/s"
    point = next(t for t in drawn["data"] if t["x"] == [0.5])
    assert point["y"] == [1.5]  # the candidate's measured position
    assert page.evaluate(
        "document.getElementById('candidate-roofline')._fullLayout.xaxis.type") == "log"
    label = hover_text(page, "#candidate-roofline .scatterlayer .trace:nth-child(3) .points path")
    assert "candidate 2" in label and "0.500 FLOP/B" in label and "1.50 TFLOP/s" in label
    assert_only_partial_plotly(scripts, CHARTS_BUNDLE)

    scripts.clear()
    page.goto(f"{server.url}/problems/")
    page.click("#problems a >> text=tiny-relu")
    page.wait_for_selector("#problem-best[data-drawn]", timeout=15000)
    drawn = page.evaluate(DRAWN, "problem-best")
    ours = [t for t in drawn["traces"] if t["name"].startswith(f"session {session_pk} ")]
    assert ours and ours[0]["visible"] is True
    series = drawn["data"][drawn["traces"].index(ours[0])]
    assert series["y"] == [1.5, 3.21]  # the best as it improved
    assert_only_partial_plotly(scripts, CHARTS_BUNDLE)
    assert not page.errors


def node(i: int, parent: int | None, **fields) -> dict:
    return {"node_id": str(i), "parent_node_id": None if parent is None else str(parent),
            "depth": 0 if parent is None else 1, "status": "correct", "reward": 0.5,
            "speedup_vs_eager": 1 + i / 2, "speedup_vs_compile": 1 + i / 4, "evaluated": i,
            "budget": 8, **fields}


def live_session(server) -> int:
    pk = server.command("create_session", hardware="h200", budget=8)["session"]
    server.command("publish", session=pk, events=[
        ["status_changed", {"status": "running"}],
        ["node_created", node(0, None, status="reference")],
        ["node_evaluated", node(1, 0)],
        ["best_improved", {"node_id": "1", "speedup_vs_eager": 1.5, "speedup_vs_compile": 1.25,
                           "reward": 0.5}]])
    return pk


@pytest.mark.parametrize("render, bundle, tree_trace", [
    ("", CHARTS_BUNDLE, "scatter"),  # software WebGL here: SVG, the chart pages' bundle
    ("?render=webgl", GL_BUNDLE, "scattergl"),
])
def test_live_session_tree_draws_and_streams_with_its_bundle(
        page, live_server_process, login, render, bundle, tree_trace):
    server = live_server_process
    pk = live_session(server)
    login(page, "alpha-viewer", "pw-viewer")
    scripts = script_responses(page)
    page.goto(f"{server.url}/sessions/{pk}/{render}")
    page.wait_for_selector("#connection[data-state=live]")
    page.wait_for_function("window.kernelhubLive.stats.nodeSeenAt['1'] !== undefined",
                           timeout=15000)
    # Streamed after load: drawn without a reload.
    server.command("publish", session=pk, events=[["node_evaluated", node(2, 1, depth=2)]])
    page.wait_for_function("window.kernelhubLive.stats.nodeSeenAt['2'] !== undefined",
                           timeout=15000)
    tree = page.evaluate(DRAWN, "tree-plot")
    assert [t["type"] for t in tree["traces"]] == [tree_trace] * 3
    assert all(t["visible"] is True for t in tree["traces"])
    assert tree["data"][2]["y"] == [0, 1, 2]  # the nodes' depths
    if tree_trace == "scatter":
        assert tree["markers"] >= 3
        label = hover_text(
            page, "#tree-plot .scatterlayer .trace:nth-child(3) .points path:nth-child(3)")
        assert "× eager 2.00" in label
    else:
        assert page.locator("#tree-plot canvas").count() > 0
    best = page.evaluate(DRAWN, "best-plot")
    assert best["data"][0]["y"][0] == 1.5 and best["ytitle"] == "speedup (×)"
    assert_only_partial_plotly(scripts, bundle)
    assert not page.errors
