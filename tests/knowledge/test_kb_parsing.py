"""Parsers keep section headings (and pages) with the text; code stays whole."""

import pytest

from knowledge.errors import KnowledgeInputError
from knowledge.parsing import parse_bytes

MARKDOWN = """---
myst:
  html_meta: {"keywords": "x"}
---

# Tiling guide

Intro paragraph.

## Shared memory

Pad the tile to avoid bank conflicts.

```python
for i in range(4):
    x = tile[i]
```

| arch | banks |
|------|-------|
| sm90 | 32    |
"""

RST = """.. _label:

*************
Workload tune
*************

Intro text.

Triton kernels
==============

Use ``num_stages`` wisely::

    @triton.jit
    def kernel(x):
        pass

------------
Short under
------------

Body of a section whose over- and underline are shorter than its title.

.. code-block:: python
   :linenos:

   a = 1
   b = 2
"""


def sections(parsed):
    return [(b.section, b.kind) for b in parsed.blocks]


def test_markdown_headings_code_tables_and_front_matter():
    parsed = parse_bytes("t.md", MARKDOWN.encode(), "markdown")
    assert parsed.title == "Tiling guide"
    assert ("Tiling guide > Shared memory", "code") in sections(parsed)
    assert ("Tiling guide > Shared memory", "table") in sections(parsed)
    assert not any("myst" in b.text for b in parsed.blocks)
    code = next(b for b in parsed.blocks if b.kind == "code")
    assert "    x = tile[i]" in code.text


def test_rst_titles_literal_and_code_blocks():
    parsed = parse_bytes("t.rst", RST.encode(), "rst")
    assert parsed.title == "Workload tune"
    found = sections(parsed)
    assert ("Workload tune > Triton kernels", "code") in found
    # A new adornment style opens a deeper level, as in docutils.
    assert any(s == "Workload tune > Triton kernels > Short under" for s, _ in found)
    code_blocks = [b.text for b in parsed.blocks if b.kind == "code"]
    assert any("def kernel(x):" in c for c in code_blocks)
    assert any("b = 2" in c and ":linenos:" not in c for c in code_blocks)
    assert not any("------------" in b.text for b in parsed.blocks)


def test_html_headings_pre_and_tables():
    html = ("<html><head><title>T</title><script>var x=1;</script></head><body>"
            "<h1>Guide</h1><p>Intro <b>bold</b>.</p><h2>Loops</h2><pre>a = 1\n  b = 2</pre>"
            "<table><tr><th>arch</th><th>banks</th></tr><tr><td>sm90</td><td>32</td></tr></table>"
            "</body></html>")
    parsed = parse_bytes("t.html", html.encode(), "html")
    assert ("Guide > Loops", "code") in sections(parsed)
    table = next(b for b in parsed.blocks if b.kind == "table")
    assert table.text == "arch | banks\nsm90 | 32"
    assert not any("var x" in b.text for b in parsed.blocks)
    assert next(b for b in parsed.blocks if b.kind == "code").text == "a = 1\n  b = 2"


def test_plain_text_pages_from_form_feeds():
    parsed = parse_bytes("t.txt", b"first page\n\nmore\fsecond page", "text")
    assert [b.page for b in parsed.blocks] == [1, 1, 2]


def test_pdf_pages_and_bookmark_sections(pdfs):
    pdf = pdfs.with_outline(
        pdfs.make([["Intro", "Opening words."], ["Memory", "Coalesce loads.", "Tiles", "Use smem."]]),
        [("Intro", 0), ("Memory", 1), ("Tiles", 1)],
    )
    parsed = parse_bytes("m.pdf", pdf, "pdf")
    assert parsed.pages == 2
    by_text = {b.text.splitlines()[0]: (b.section, b.page) for b in parsed.blocks}
    assert by_text["Intro"] == ("Intro", 1)
    assert by_text["Memory"] == ("Memory", 2)
    assert by_text["Tiles"] == ("Tiles", 2)


def test_whitespace_only_document_is_empty():
    with pytest.raises(KnowledgeInputError, match="contains no text"):
        parse_bytes("t.rst", b"..  a comment only\n\n", "rst")
