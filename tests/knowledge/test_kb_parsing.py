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


def _nested_outline_pdf(pdfs) -> bytes:
    """Three pages; a chapter bookmark with two nested section bookmarks."""
    import io

    from pypdf import PdfReader, PdfWriter

    pages = [["Memory", "Coalesce global loads."], ["Tiles", "Use shared memory tiles."],
             ["Banks", "Pad the tile (32 banks)", "to avoid conflicts; re-", "use data."]]
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdfs.make(pages))))
    chapter = writer.add_outline_item("Memory", 0)
    writer.add_outline_item("Tiles", 1, parent=chapter)
    writer.add_outline_item("Banks", 2, parent=chapter)
    writer.add_metadata({"/Title": "Tuning guide"})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_pdfium_and_pypdf_extract_the_same_pages_outline_and_sections(pdfs, tmp_path, monkeypatch):
    import pypdfium2

    from knowledge.parsing import pdf_worker
    from knowledge.parsing.pdf import pages_to_document

    path = tmp_path / "m.pdf"
    path.write_bytes(_nested_outline_pdf(pdfs))
    fast = pdf_worker.extract(str(path), 10, pdfium=pypdfium2)
    slow = pdf_worker.extract(str(path), 10, pdfium=None)
    assert fast["outline"] == slow["outline"] == [["Memory", 0, 0], ["Tiles", 1, 1], ["Banks", 2, 1]]
    assert fast["title"] == slow["title"] == "Tuning guide"
    assert [text.split() for _, text in fast["pages"]] == [text.split() for _, text in slow["pages"]]
    assert "\r" not in "".join(text for _, text in fast["pages"])
    sections = [(b.section, b.page) for b in pages_to_document(
        [text for _, text in fast["pages"]], fast["outline"], fast["title"]).blocks]
    assert sections == [("Memory", 1), ("Memory > Tiles", 2), ("Memory > Banks", 3)]
    # The whole parser, in its child process, takes the PDFium path unless told otherwise.
    monkeypatch.setenv("KB_PDF_PARSER", "pypdf")
    by_pypdf = parse_bytes("m.pdf", path.read_bytes(), "pdf")
    monkeypatch.delenv("KB_PDF_PARSER")
    by_pdfium = parse_bytes("m.pdf", path.read_bytes(), "pdf")
    assert [(b.section, b.page, b.text.split()) for b in by_pdfium.blocks] == \
        [(b.section, b.page, b.text.split()) for b in by_pypdf.blocks]


def test_pdfium_path_is_taken_for_ordinary_files_and_pypdf_for_bombs(pdfs, tmp_path, monkeypatch):
    import pypdfium2

    from knowledge.parsing import pdf_worker

    ordinary, bomb = tmp_path / "ok.pdf", tmp_path / "bomb.pdf"
    ordinary.write_bytes(pdfs.make([["Plain text page."]]))
    bomb.write_bytes(pdfs.bomb())
    assert not pdf_worker.has_oversized_stream(str(ordinary))
    assert pdf_worker.has_oversized_stream(str(bomb))  # inflates past STREAM_LIMIT

    def refuse(*args):
        raise AssertionError("wrong extractor")

    monkeypatch.setattr(pdf_worker, "_extract_pypdf", refuse)
    assert "Plain text page." in pdf_worker.extract(str(ordinary), 10, pdfium=pypdfium2)["pages"][0][1]
    monkeypatch.undo()
    monkeypatch.setattr(pdf_worker, "_extract_pdfium", refuse)
    result = pdf_worker.extract(str(bomb), 10, pdfium=pypdfium2)
    assert "safety limits" in result["failed"][0][1]  # pypdf's limit held on that page


def test_pdf_parser_choice_sets_when_a_second_worker_pays(monkeypatch):
    from knowledge.parsing import pdf

    assert pdf.pdfium_available()
    assert pdf._parallel_min_bytes() == pdf.PARALLEL_MIN_BYTES_PDFIUM
    monkeypatch.setenv("KB_PDF_PARSER", "pypdf")
    assert not pdf.pdfium_available()
    assert pdf._parallel_min_bytes() == pdf.PARALLEL_MIN_BYTES
    monkeypatch.setenv("KB_PDF_PARSER", "mupdf")
    with pytest.raises(ValueError, match="KB_PDF_PARSER"):
        pdf.pdfium_available()


def test_pdfium_page_that_fails_is_listed_and_the_rest_still_count(pdfs, tmp_path, monkeypatch):
    import pypdfium2

    from knowledge.parsing import pdf_worker

    path = tmp_path / "m.pdf"
    path.write_bytes(pdfs.make([["First page."], ["Broken page."], ["Third page."]]))
    real = pdf_worker._pdfium_page_text

    def page_text(document, index):
        if index == 1:
            raise pypdfium2.PdfiumError("bad content stream")
        return real(document, index)

    monkeypatch.setattr(pdf_worker, "_pdfium_page_text", page_text)
    result = pdf_worker.extract(str(path), 10, pdfium=pypdfium2)
    assert [index for index, _ in result["pages"]] == [0, 2]
    assert result["failed"] == [[1, "PdfiumError: bad content stream"]]
    assert "Third page." in result["pages"][1][1]
