"""Issue 32, item 6 in a real browser at 1440×900: the dashboard's session and approved-kernel
tables show their last column whole, without clipping or a horizontal scroll."""

from __future__ import annotations

LAST_COLUMN_VISIBLE = """(card) => {
  const table = document.querySelector(card + ' table');
  const last = table.querySelector('thead th:last-child').getBoundingClientRect();
  const box = document.querySelector(card).getBoundingClientRect();
  const scroller = table.parentElement;
  return {inside: last.right <= box.right + 0.5 && last.right <= window.innerWidth,
          scrolls: scroller.scrollWidth > scroller.clientWidth + 1,
          text: table.querySelector('thead th:last-child').innerText};
}"""


def test_dashboard_tables_are_not_clipped_at_1440(chromium, live_server_process, login):
    server = live_server_process
    for i in range(3):
        pk = server.command("create_session", hardware="h200", status="finished",
                            best_speedup_vs_eager=1.5 + i)["session"]
        cand = server.command("create_candidate", session=pk, node_id="1", status="correct",
                              speedup_vs_eager=1.5 + i, speedup_vs_compile=1.1)["candidate"]
        server.command("approve", candidate=cand)
    server.command("create_session", hardware="h200", status="running")
    context = chromium.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    login(page, "alpha-viewer", "pw-viewer")
    for card, last in (("#finished-sessions", "Best × compile"),
                       ("#running-sessions", "Best × compile"),
                       ("#approved-kernels", "Reviewer")):
        found = page.evaluate(LAST_COLUMN_VISIBLE, card)
        assert found["text"] == last
        assert found["inside"] and not found["scrolls"], (card, found)
    context.close()
