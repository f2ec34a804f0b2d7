"""Issue 32, item 5 in a real browser: a session's candidates as a table that sorts, filters
and pages in place (htmx, on the server, the URL kept), and two kernels compared side by side."""

from __future__ import annotations


def test_candidates_table_sorts_filters_pages_and_compares(page, live_server_process, login):
    server = live_server_process
    pk = server.command("create_session", hardware="h200", status="finished")["session"]
    for i in range(60):
        server.command("create_candidate", session=pk, node_id=str(i),
                       status="correct" if i % 2 else "incorrect", speedup_vs_eager=1 + i / 10,
                       source=f"import torch\nBLOCK = {i}\n",
                       origin={"transformation": "tile" if i % 3 else "fuse"})
    login(page, "alpha-viewer", "pw-viewer")
    page.goto(f"{server.url}/sessions/{pk}/")
    page.click("#candidates-link")
    page.wait_for_url(f"{server.url}/sessions/{pk}/candidates/")
    assert "60 candidates · page 1 of 2" in page.inner_text(".list-total")
    assert page.locator("#candidates-table tbody tr").count() == 50
    first = page.locator("#candidates-table tbody tr").first.inner_text()
    assert first.startswith("\tcandidate 59") or "candidate 59" in first  # best × eager first
    # Sort by × eager ascending: one click toggles, the table is swapped in place.
    page.click("a.sort[data-sort=eager]")
    page.wait_for_url("**sort=eager**")
    page.wait_for_function("document.querySelector('#candidates-table tbody tr')"
                           ".innerText.includes('candidate 0')")
    # Filter: correct ones only; the list says how many and keeps the sort.
    page.select_option("select[name=status]", "correct")
    page.wait_for_function("document.querySelector('.list-total').innerText"
                           ".startsWith('30 candidates')")
    assert "sort=eager" in page.url and "status=correct" in page.url
    assert "incorrect" not in page.inner_text("#candidates-table tbody")
    page.locator("#candidates-table tbody tr input[name=c]").nth(0).check()
    page.locator("#candidates-table tbody tr input[name=c]").nth(1).check()
    page.click("#compare-selected")
    page.wait_for_url("**/sessions/compare/?c=*")
    assert "Compare 2 kernels" in page.inner_text("h1")
    assert page.locator("#compare-table thead th").count() == 3
    diff = page.inner_text(".compare-diff")
    assert "candidate 1 → candidate 3" in diff and "BLOCK = 3" in diff
    assert not page.errors


def test_sessions_list_pages_on_the_server(page, live_server_process, login):
    server = live_server_process
    for _ in range(30):
        server.command("create_session", hardware="h200", status="finished")
    login(page, "alpha-viewer", "pw-viewer")
    page.goto(server.url + "/sessions/")
    total = page.inner_text(".list-total")
    assert "page 1 of" in total
    assert page.locator(".session-table tbody tr").count() == 25
    page.click("a.page-next")
    page.wait_for_url("**page=2**")
    page.fill("input[name=q]", "no-such-problem")
    page.wait_for_function("document.querySelector('.list-total').innerText"
                           ".startsWith('0 sessions')")
    assert "No session matches." in page.inner_text("#session-list")
    assert not page.errors


def test_approved_kernels_sort_filter_and_page_in_place(page, live_server_process, login):
    server = live_server_process
    pk = server.command("create_session", hardware="h200", status="finished")["session"]
    for i in range(30):
        cand = server.command("create_candidate", session=pk, node_id=f"k{i}", status="correct",
                              speedup_vs_eager=1 + i, source=f"BLOCK = {i}\n")["candidate"]
        server.command("approve", candidate=cand)
    login(page, "alpha-viewer", "pw-viewer")
    page.goto(server.url + "/review/approved/")
    assert "page 1 of 2" in page.inner_text("#approved-list .list-total")
    assert page.locator("#approved-kernels tbody tr").count() == 25
    page.click("#approved-list a.sort[data-sort=eager]")  # fastest first
    page.wait_for_url("**sort=-eager**")
    page.wait_for_function("document.querySelector('#approved-kernels tbody tr')"
                           ".innerText.includes('node k29')")
    page.fill("#filter_min_speedup", "28")
    page.wait_for_function("document.querySelector('#approved-list .list-total').innerText"
                           ".startsWith('3 approved kernels')")
    assert "min_speedup=28" in page.url and "sort=-eager" in page.url
    assert page.locator("#approved-kernels tbody tr a.download-module").count() == 3
    assert not page.errors


def test_documents_list_searches_and_pages_in_place(page, live_server_process, login):
    """Other tests of this server upload documents too: every count here is within a search."""
    server = live_server_process
    for i in range(30):
        server.command("create_document", title=f"Tuning guide {i:02d}", hardware=["h100"])
    server.command("create_document", title="CDNA3 ISA", vendor="amd", status="failed",
                   hardware=["mi300x"])
    total = "document.querySelector('#document-list .list-total').innerText.startsWith('{}')"
    login(page, "alpha-viewer", "pw-viewer")
    page.goto(server.url + "/knowledge/")
    page.fill("#filter_q", "Tuning guide")
    page.wait_for_function(total.format("30 documents"))
    assert "page 1 of 2" in page.inner_text("#document-list .list-total")
    page.click("#document-list a.page-next")
    page.wait_for_url("**page=2**")
    page.fill("#filter_q", "CDNA3 ISA")
    page.wait_for_function(total.format("1 documents"))
    page.select_option("#filter_status", "failed")
    page.wait_for_url("**status=failed**")
    page.wait_for_function(total.format("1 documents"))
    assert "CDNA3 ISA" in page.inner_text("#documents-table") and "page=" not in page.url
    page.select_option("#filter_status", "ready")
    page.wait_for_function(total.format("0 documents"))
    page.select_option("#filter_status", "")
    page.fill("#filter_q", "guide 07")
    page.wait_for_function("document.querySelector('#documents-table')?.innerText"
                           ".includes('Tuning guide 07')")
    assert page.inner_text("#document-list .list-total").startswith("1 documents")
    assert not page.errors


def test_a_candidate_never_approved_downloads_from_its_page(page, live_server_process, login):
    server = live_server_process
    pk = server.command("create_session", hardware="h200", status="finished")["session"]
    cand = server.command("create_candidate", session=pk, node_id="7", status="incorrect",
                          source="import torch\nBLOCK = 77  # not approved\n")["candidate"]
    login(page, "alpha-viewer", "pw-viewer")
    page.goto(f"{server.url}/sessions/candidates/{cand}/")
    with page.expect_download() as download:
        page.click("#download-candidate")
    file = download.value
    assert file.suggested_filename == f"kernelhub-session-{pk}-candidate-7.py"
    assert "BLOCK = 77  # not approved" in open(file.path()).read()
    assert not page.errors
