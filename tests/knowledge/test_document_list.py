"""Issue 32 item 5: the knowledge documents as a server-side list: search, filters, sort,
pages, htmx partial, team scope."""

from __future__ import annotations

import pytest
from django.urls import reverse

from knowledge.models import Document

pytestmark = pytest.mark.django_db


def make_document(team, i: int, **fields) -> Document:
    values = dict(filename=f"manual-{i:03d}.md", title=f"Manual {i:03d}", kind="markdown",
                  size_bytes=1, content_hash=f"{i:064d}", stored_path=f"x/{i}",
                  category="hardware-specific", hardware=["h100"], status="ready",
                  chunk_count=i, team=team)
    return Document.objects.create(**(values | fields))


@pytest.fixture
def documents(teams):
    docs = [make_document(teams["alpha"], i) for i in range(40)]
    docs.append(make_document(teams["alpha"], 100, title="MI300X ISA", vendor="amd",
                              kind="pdf", hardware=["mi300x", "cdna3"], status="failed",
                              category="general-optimization"))
    docs.append(make_document(teams["beta"], 200, title="Beta notes"))
    return docs


def body(page: str) -> str:
    return page[page.index("<tbody>"):page.index("</tbody>")]


def get(client, **query) -> str:
    return client.get(reverse("knowledge:document_list"), query).content.decode()


def test_pages_newest_first_within_the_teams(client, teams, documents):
    client.force_login(teams["users"][("alpha", "viewer")])
    page = get(client)
    assert "41 documents · page 1 of 2" in page
    assert body(page).count("<tr>") == 25 and "Beta notes" not in page
    assert "MI300X ISA" in body(page).split("<tr>")[1]  # the newest upload first


def test_search_filters_and_sort(client, teams, documents):
    client.force_login(teams["users"][("alpha", "viewer")])
    assert "1 documents" in get(client, q="amd") and "MI300X ISA" in get(client, q="amd")
    assert "1 documents" in get(client, status="failed")
    assert "1 documents" in get(client, kind="pdf")
    assert "1 documents" in get(client, hardware="CDNA3")
    assert "0 documents" in get(client, hardware="cdna")  # a whole tag, not a part of one
    assert "40 documents" in get(client, category="hardware-specific")
    most_chunks = body(get(client, sort="-chunks")).split("<tr>")[1]
    assert "MI300X ISA" in most_chunks  # 100 chunks
    by_title = body(get(client, sort="-title")).split("<tr>")[1]
    assert "Manual 039" in by_title


def test_an_unknown_choice_is_said_and_htmx_gets_only_the_list(client, teams, documents):
    client.force_login(teams["users"][("alpha", "viewer")])
    bad = get(client, status="lost")
    assert "Select a valid choice" in bad and "0 documents" in bad
    partial = client.get(reverse("knowledge:document_list"), {"sort": "title"},
                         HTTP_HX_REQUEST="true").content.decode()
    assert partial.lstrip().startswith('<div id="document-list">') and "kb-search" not in partial


def test_every_list_control_replaces_the_request_in_flight(client, teams, documents):
    """The filter form, the page links and the sort headers share one request slot on the
    list they swap: typing then clicking "next" fires the form's `change` (the input's blur)
    and the page's request together, and the later one must win, not whichever answers
    last."""
    import re

    client.force_login(teams["users"][("alpha", "viewer")])
    page = get(client, q="Manual")
    controls = re.findall(r'<(?:form|a)\b[^>]*\bhx-get="[^"]*"[^>]*>', page)
    kinds = {re.search(r'class="([\w-]+)', c).group(1) for c in controls}
    assert {"list-filters", "page-next", "sort"} <= kinds, kinds
    for control in controls:
        target = re.search(r'hx-target="([^"]+)"', control).group(1)
        assert f'hx-sync="{target}:replace"' in control, control
