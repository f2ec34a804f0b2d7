"""Plain text: paragraphs separated by blank lines; form feeds separate pages."""

from __future__ import annotations

import re

from knowledge.parsing.blocks import Block, ParsedDocument

PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


def parse_text(text: str) -> ParsedDocument:
    pages = text.split("\f")
    paged = len(pages) > 1
    blocks = []
    for number, page in enumerate(pages, start=1):
        for paragraph in PARAGRAPH_BREAK.split(page):
            if paragraph.strip():
                kind = "code" if _looks_preformatted(paragraph) else "text"
                blocks.append(Block(paragraph.strip("\n"), "", number if paged else None, kind))
    title = next((b.text.splitlines()[0].strip() for b in blocks), "")
    return ParsedDocument(blocks=blocks, title=title[:200], pages=len(pages) if paged else None)


def _looks_preformatted(paragraph: str) -> bool:
    lines = paragraph.splitlines()
    return len(lines) > 1 and all(line.startswith(("    ", "\t")) for line in lines if line)
