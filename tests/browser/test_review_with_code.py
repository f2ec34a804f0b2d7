"""Issue 32, item 2 in a real browser: a reviewer decides with the kernel's code, its diffs,
trials, timings with spread, roofline position and integrity findings in view, on cards
titled by problem and candidate, and lands on the next item after deciding."""

from __future__ import annotations

KERNEL = ("import torch\nimport triton\n\nclass ModelNew(torch.nn.Module):\n"
          "    def forward(self, x):\n        return relu_kernel_launch(x)  # fused\n")
PARENT = "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n" \
         "        return torch.relu(x)\n"


def proposed(server, node_id, **fields):
    """A finished H200 session's candidate (with a parent) in the review queue."""
    pk = server.command("create_session", hardware="h200", status="finished")["session"]
    parent = server.command("create_candidate", session=pk, node_id="0", status="correct",
                            source=PARENT)["candidate"]
    cand = server.command(
        "create_candidate", session=pk, node_id=node_id, parent_id=parent, depth=1,
        status="correct", source=KERNEL, speedup_vs_eager=2.0, speedup_vs_compile=1.5,
        reward=0.8, coverage=0.99,
        timing={"candidate": {"median_ms": 0.02, "iqr_ms": 0.001, "samples": 30},
                "eager": {"median_ms": 0.04, "iqr_ms": 0.004, "samples": 30}},
        result={"correctness": [{"trial": i, "seed": i, "max_abs_error": 1e-7,
                                 "max_rel_error": 1e-6, "passed": True, "note": ""}
                                for i in range(3)]},
        diagnostics={"roofline": {"available": True, "arithmetic_intensity": 0.25,
                                  "ridge_point": 200.0, "achieved_bandwidth_gbs": 3600,
                                  "peak_bandwidth_gbs": 4800, "achieved_tflops": 0.9,
                                  "peak_tflops": 990}}, **fields)["candidate"]
    review = server.command("propose", candidate=cand)["review"]
    return pk, cand, review


def test_reviewer_sees_the_code_and_goes_on_to_the_next_item(page, live_server_process, login):
    server = live_server_process
    _, _, older = proposed(server, "7")
    _, _, newer = proposed(server, "9", integrity_flags=[
        {"check": "runtime.timing_floor", "evidence": "close to the timing floor",
         "severity": "warning"}])
    login(page, "alpha-reviewer", "pw-reviewer")
    page.goto(server.url + "/review/")
    card = page.locator(f"#review-{newer}")
    title = card.locator(".review-title").inner_text()
    assert title.startswith("tiny-relu · candidate 9")  # not "9 · …" (the node number)
    assert card.locator(".speedup-eager").inner_text() == "2×"
    card.locator("a.open-review").click()
    page.wait_for_url(f"{server.url}/review/{newer}/")
    assert page.inner_text("#review-title").startswith("tiny-relu · candidate 9")
    source = page.locator("#evidence-source")
    assert source.locator(".highlight").count() == 1 and "relu_kernel_launch" in source.inner_text()
    assert "fused" in page.inner_text("#evidence-diff-parent .highlight")
    assert "candidate 0" in page.inner_text("#evidence-diff-parent h2")
    page.click("#evidence-diff-reference summary")
    assert "reference.py" in page.inner_text("#evidence-diff-reference .highlight")
    timings = page.inner_text("#evidence-timings")
    assert "±5.0 %" in timings and "±10.0 %" in timings  # IQR / median
    assert "75.0 % of peak bandwidth" in timings and "memory-bound side" in timings
    assert page.locator("#evidence-trials tbody tr").count() == 3
    assert "close to the timing floor" in page.inner_text("#evidence-trials")
    page.fill("textarea[name$='-comment']", "rejected: timing too close to the floor")
    page.click("#decision button.reject")
    # Landed on the next item of the queue, not on another page.
    page.wait_for_url(f"{server.url}/review/{older}/")
    assert "rejected" in page.inner_text(".messages, body")
    assert page.inner_text("#review-title").startswith("tiny-relu · candidate 7")
    download = page.request.get(server.url + page.get_attribute("#download-source", "href"))
    assert download.ok and "relu_kernel_launch" in download.text()
    assert "attachment" in download.headers["content-disposition"]
    assert not page.errors
