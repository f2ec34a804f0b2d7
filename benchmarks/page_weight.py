"""Page weight and load time of the dashboard and the live session page, cold and warm.

Runs a real server (daphne, the embedded default, as `make run`: DEBUG off, static files
collected) in its own process with a few sessions, candidates and approved kernels, and
opens each page in Debian's chromium: cold = a fresh browser cache (the cookies only), warm =
the same page opened again in that context. Bytes = what crossed the network (CDP's
encodedDataLength: compressed bodies and headers; a cache hit costs nothing). Load = the
navigation's loadEventEnd.

    .venv/bin/python benchmarks/page_weight.py [--repeats 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ui_latency import CHROMIUM, CHROMIUM_ARGS, load_liveserver  # noqa: E402


def seed(server) -> int:
    for i in range(4):
        pk = server.command("create_session", hardware="h200", status="finished",
                            best_speedup_vs_eager=1.2 + i)["session"]
        root = server.command("create_candidate", session=pk, node_id="0",
                              status="reference")["candidate"]
        for node in range(1, 13):
            server.command("create_candidate", session=pk, node_id=str(node), parent_id=root,
                           depth=1, status="correct" if node % 3 else "incorrect",
                           speedup_vs_eager=1 + node / 10, reward=0.5,
                           evaluated_at="2026-12-01T12:00:00+00:00")
        best = server.command("create_candidate", session=pk, node_id="99", status="correct",
                              speedup_vs_eager=1.2 + i, speedup_vs_compile=1.1)["candidate"]
        server.command("approve", candidate=best)
    return pk


def measure(context, url: str) -> dict:
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    sizes: list[int] = []
    cdp.on("Network.loadingFinished", lambda e: sizes.append(int(e["encodedDataLength"])))
    page.goto(url, wait_until="load")
    page.wait_for_timeout(300)  # late loadingFinished events
    load_ms = page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")
    page.close()
    return {"bytes": sum(sizes), "requests": len(sizes), "load_ms": load_ms}


def run(repeats: int) -> dict:
    from playwright.sync_api import sync_playwright

    results: dict = {}
    with load_liveserver().LiveServer(env={"DEBUG": ""}) as server, sync_playwright() as pw:
        session_pk = seed(server)
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        login = browser.new_context()
        page = login.new_page()
        page.goto(server.url + "/accounts/login/")
        page.fill("#id_username", "alpha-viewer")
        page.fill("#id_password", "pw-viewer")
        page.click("#login-submit")
        page.wait_for_url(server.url + "/")
        cookies = login.cookies()
        login.close()
        pages = {"dashboard": server.url + "/",
                 "session": f"{server.url}/sessions/{session_pk}/"}
        for name, url in pages.items():
            runs = []
            for _ in range(repeats):
                context = browser.new_context()  # an empty cache
                context.add_cookies(cookies)
                runs.append({"cold": measure(context, url), "warm": measure(context, url)})
                context.close()
            results[name] = {state: {key: statistics.median(r[state][key] for r in runs)
                                     for key in ("bytes", "requests", "load_ms")}
                             for state in ("cold", "warm")}
        results["chromium"] = browser.version
        browser.close()
    results["machine"] = f"{platform.node()} {platform.machine()}, {platform.processor()}"
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args()
    results = run(args.repeats)
    print("| page | cold bytes | cold requests | cold load | warm bytes | warm load |")
    print("|---|---|---|---|---|---|")
    for name in ("dashboard", "session"):
        cold, warm = results[name]["cold"], results[name]["warm"]
        print(f"| {name} | {cold['bytes'] / 1024:,.0f} KiB | {cold['requests']:.0f} | "
              f"{cold['load_ms']:.0f} ms | {warm['bytes'] / 1024:,.1f} KiB | "
              f"{warm['load_ms']:.0f} ms |")
    print(f"chromium {results['chromium']}; {results['machine']}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
