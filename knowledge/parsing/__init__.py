"""Turn a file into blocks of text that remember their section heading and page.

`parse_bytes(name, data, kind)` is the entry point. PDFs are parsed in a separate process
with time and memory limits (see pdf.py); the text formats are parsed here.
"""

from __future__ import annotations

from knowledge.errors import KnowledgeInputError
from knowledge.filetypes import decode_text
from knowledge.parsing.blocks import Block, ParsedDocument
from knowledge.parsing.html import parse_html
from knowledge.parsing.markdown import parse_markdown
from knowledge.parsing.rst import parse_rst
from knowledge.parsing.text import parse_text

TEXT_PARSERS = {
    "markdown": parse_markdown,
    "rst": parse_rst,
    "html": parse_html,
    "text": parse_text,
}


def parse_bytes(name: str, data: bytes, kind: str, *, max_pdf_pages: int = 2000,
                on_page=lambda done, total: None) -> ParsedDocument:
    """`on_page(pages parsed, pages in the file)` is called as PDF pages finish."""
    if kind == "pdf":
        from knowledge.parsing.pdf import parse_pdf

        parsed = parse_pdf(name, data, max_pages=max_pdf_pages, on_page=on_page)
    else:
        parsed = TEXT_PARSERS[kind](decode_text(name, data))
    parsed.blocks = [b for b in parsed.blocks if b.text.strip()]
    if not parsed.blocks and parsed.failed_pages:
        page, why = parsed.failed_pages[0]
        raise KnowledgeInputError(f"{name}: no page could be read; page {page}: {why}.")
    if not parsed.blocks:
        hint = " (a scanned PDF without a text layer?)" if kind == "pdf" else ""
        raise KnowledgeInputError(f"{name}: the document contains no text{hint}.")
    return parsed


__all__ = ["Block", "ParsedDocument", "parse_bytes"]
