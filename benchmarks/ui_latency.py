"""UI latency: from an evaluation's end (its event published) to its node on the live page,
and the live page's update cost with a 2,000-node tree.

Runs a real server (daphne, embedded default: in-memory channel layer, SQLite) in its own
process, publishes node events *inside* it as the runner does, and reads, in Debian's
chromium, when each node was drawn (after Plotly finished) and how long each redraw took.

    .venv/bin/python benchmarks/ui_latency.py [--events 100] [--nodes 2000] [--json out.json]
    .venv/bin/python benchmarks/ui_latency.py --launch 3   # session launch only (issue 32)

Aims: p95 latency < 250 ms; < 50 ms per update at 2,000 nodes.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def load_liveserver():
    path = REPO / "tests" / "browser" / "liveserver.py"
    spec = importlib.util.spec_from_file_location("kernelhub_liveserver", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(q / 100 * (len(values) - 1))))]


def node_payload(i: int, total: int) -> dict:
    parent = None if i == 0 else (i - 1) // 4  # a 4-ary tree, ~6 levels at 2,000 nodes
    statuses = ("correct", "incorrect", "correct", "hack_suspected", "compile_error",
                "rejected_lazy", "correct")
    depth, p = 0, parent
    while p is not None:
        depth, p = depth + 1, (None if p == 0 else (p - 1) // 4)
    return {"node_id": str(i), "parent_node_id": None if parent is None else str(parent),
            "depth": depth, "status": "reference" if i == 0 else statuses[i % len(statuses)],
            "reward": (i % 97) / 97, "speedup_vs_eager": 0.5 + (i % 31) / 10,
            "speedup_vs_compile": 0.4 + (i % 29) / 12, "bottleneck": "memory-bound",
            "evaluated": i, "budget": total}


def measure_latency(server, page, session: int, ids: range, interval_s: float) -> list[float]:
    answer = server.command("publish", session=session, timeout_s=600, interval_s=interval_s,
                            events=[["node_evaluated", node_payload(i, 10_000)] for i in ids])
    last = str(ids[-1])
    page.wait_for_function(f"window.kernelhubLive.stats.nodeSeenAt['{last}'] !== undefined",
                           timeout=30_000)
    seen = page.evaluate("window.kernelhubLive.stats.nodeSeenAt")
    received = page.evaluate("window.kernelhubLive.stats.nodeReceivedAt")
    sent = page.evaluate("window.kernelhubLive.stats.nodeSentAt")
    pairs = list(zip(ids, answer["published_ms"]))
    server = [sent[str(i)] - published for i, published in pairs]
    transport = [received[str(i)] - sent[str(i)] for i, _ in pairs]
    print(f"  {len(pairs)} evaluations at up to {ids[-1] + 1} nodes: publish → frame sent "
          f"p50 {pct(server, 50):.1f} / p95 {pct(server, 95):.1f} ms; sent → handled by the "
          f"page p50 {pct(transport, 50):.1f} / p95 {pct(transport, 95):.1f} ms")
    return [seen[str(i)] - published for i, published in pairs]


def measure_launch(server, browser, runs: int) -> dict:
    """Seconds from the click on "Launch session" until the session's page has loaded: with a
    library problem never checked (offline synthesizer), and with an uploaded problem."""
    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    page.on("dialog", lambda dialog: dialog.accept())  # "Cancel this session?"
    page.goto(server.url + "/accounts/login/")
    page.fill("#id_username", "alpha-engineer")
    page.fill("#id_password", "pw-engineer")
    page.click("#login-submit")
    page.wait_for_url(server.url + "/")
    source = (REPO / "tests" / "tiny_problem.py").read_bytes()
    timings: dict[str, list[float]] = {"library_unchecked_s": [], "upload_s": []}
    for run in range(runs):
        for case in timings:
            if case == "upload_s":
                page.goto(server.url + "/sessions/new/")
                page.set_input_files("#id_problem_file", files=[{
                    "name": f"bench-up-{run}.py", "mimeType": "text/x-python", "buffer": source}])
                page.fill("#id_problem_name", f"bench-up-{run}-{time.time_ns()}")
            else:
                name = f"bench-lib-{run}-{time.time_ns()}"
                server.command("create_problem", name=name)
                page.goto(server.url + "/sessions/new/")
                page.select_option("#id_problem", label=name)
            page.select_option("#id_hardware", label="Interpreter (CPU)")
            page.select_option("#id_synthesizer", "offline")
            page.fill("#id_budget_evaluations", "1")
            started = time.perf_counter()
            with page.expect_navigation(timeout=180_000):
                page.click("#launch", no_wait_after=True)  # the wait is what is measured
            page.wait_for_load_state("load")
            elapsed = time.perf_counter() - started
            if not re.search(r"/sessions/\d+/$", page.url):  # the form again: say why
                errors = page.locator(".error").all_inner_texts()
                print(f"  launch ({case[:-2]}) refused after {elapsed:.2f} s: {errors}")
                continue
            timings[case].append(elapsed)
            print(f"  launch ({case[:-2]}): {elapsed:.2f} s")
            if page.locator("#btn-cancel").count():  # the next launch runs on an idle server
                page.click("#btn-cancel")
                page.wait_for_selector("#controls:not(:has(#btn-cancel))", state="attached")
    page.close()
    return {case: {"n": len(v), "median": round(statistics.median(v), 2),
                   "max": round(max(v), 2)} for case, v in timings.items() if v}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100, help="events for the latency run")
    parser.add_argument("--nodes", type=int, default=2000, help="tree size for the cost run")
    parser.add_argument("--interval", type=float, default=0.1,
                        help="seconds between evaluations in the latency runs")
    parser.add_argument("--render", choices=["auto", "webgl", "svg"], default="auto",
                        help="how the page draws the tree (auto: WebGL when the browser has it)")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--launch", type=int, default=0, metavar="RUNS",
                        help="measure only the session launch, RUNS times per case")
    args = parser.parse_args()
    if args.launch:
        return launch_main(args)

    from playwright.sync_api import sync_playwright

    with load_liveserver().LiveServer() as server, sync_playwright() as playwright:
        session = server.command("create_session", budget=10_000)["session"]
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.goto(server.url + "/accounts/login/")
        page.fill("#id_username", "alpha-viewer")
        page.fill("#id_password", "pw-viewer")
        page.click("#login-submit")
        page.wait_for_url(server.url + "/")
        query = "" if args.render == "auto" else f"?render={args.render}"
        page.goto(f"{server.url}/sessions/{session}/{query}")
        page.wait_for_selector("#connection[data-state=live]")

        # 1. Latency on a small tree, one evaluation every `interval` seconds.
        small = measure_latency(server, page, session, range(0, args.events), args.interval)

        # 2. Grow the tree to `nodes` in bursts (as a fast search would), then measure the
        #    redraw cost and the latency of single evaluations at that size.
        burst = 250
        for start in range(args.events, args.nodes - 50, burst):
            stop = min(start + burst, args.nodes - 50)
            server.command("publish", session=session, timeout_s=600, events=[
                ["node_evaluated", node_payload(i, 10_000)] for i in range(start, stop)])
        page.wait_for_function(
            f"window.kernelhubLive.state.order.length >= {args.nodes - 50}", timeout=120_000)
        page.evaluate("window.kernelhubLive.stats.renders.length = 0")
        large = measure_latency(server, page, session, range(args.nodes - 50, args.nodes),
                                args.interval)
        renders = page.evaluate("window.kernelhubLive.stats.renders")
        at_size = [r for r in renders if r["nodes"] >= args.nodes - 50]
        costs = [r["ms"] for r in at_size]
        sync_costs = [r["syncMs"] for r in at_size]
        frame_costs = [r["frameMs"] for r in at_size if r.get("frameMs") is not None]
        node_count = page.evaluate("window.kernelhubLive.state.order.length")
        renderer = page.evaluate("window.kernelhubLive.renderer")
        browser.close()

    results = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.node()} {platform.machine()} {platform.processor() or ''}".strip(),
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(), "load_average_1m": round(os.getloadavg()[0], 1),
        "latency_small_tree_ms": {"n": len(small), "p50": round(pct(small, 50), 1),
                                  "p95": round(pct(small, 95), 1), "max": round(max(small), 1)},
        "latency_2000_nodes_ms": {"n": len(large), "p50": round(pct(large, 50), 1),
                                  "p95": round(pct(large, 95), 1), "max": round(max(large), 1)},
        "update_cost_2000_nodes_ms": {"n": len(costs), "p50": round(pct(costs, 50), 1),
                                      "p95": round(pct(costs, 95), 1),
                                      "mean": round(statistics.fmean(costs), 1),
                                      "sync_p50": round(pct(sync_costs, 50), 1),
                                      "until_presented_p50": round(pct(frame_costs, 50), 1),
                                      "until_presented_p95": round(pct(frame_costs, 95), 1)},
        "nodes_drawn": node_count, "render": args.render, "plotly_trace": renderer,
    }
    print(f"latency publish → node drawn, {results['latency_small_tree_ms']['n']} evaluations, "
          f"small tree: p50 {results['latency_small_tree_ms']['p50']} ms, "
          f"p95 {results['latency_small_tree_ms']['p95']} ms (aim < 250 ms)")
    print(f"latency at {node_count} nodes: p50 {results['latency_2000_nodes_ms']['p50']} ms, "
          f"p95 {results['latency_2000_nodes_ms']['p95']} ms")
    print(f"update cost at {node_count} nodes ({len(costs)} redraws): "
          f"p50 {results['update_cost_2000_nodes_ms']['p50']} ms, "
          f"p95 {results['update_cost_2000_nodes_ms']['p95']} ms (aim < 50 ms); until the frame "
          f"is presented p50 {results['update_cost_2000_nodes_ms']['until_presented_p50']} ms")
    print(json.dumps(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


def launch_main(args) -> int:
    from playwright.sync_api import sync_playwright

    with load_liveserver().LiveServer() as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        results = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                   "cpus": os.cpu_count(), "load_average_1m": round(os.getloadavg()[0], 1),
                   "launch": measure_launch(server, browser, args.launch)}
        browser.close()
    print(json.dumps(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
