"""Markdown (CommonMark + tables, MyST fences) to blocks, via markdown-it-py's block map.

Block text is the source lines as written, so code keeps its layout and links their text.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

from knowledge.parsing.blocks import Block, HeadingPath, ParsedDocument

FRONT_MATTER = re.compile(r"\A---\s*\n.*?\n---\s*\n", re.DOTALL)
_md = MarkdownIt("commonmark").enable("table")

KIND_BY_TOKEN = {"fence": "code", "code_block": "code", "table_open": "table"}


def parse_markdown(text: str) -> ParsedDocument:
    # Blank out YAML front matter but keep line numbers.
    text = FRONT_MATTER.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    lines = text.splitlines()
    tokens = _md.parse(text)
    headings = HeadingPath()
    blocks: list[Block] = []
    title = ""
    for i, token in enumerate(tokens):
        if token.level != 0 or token.map is None or token.nesting == -1:
            continue
        if token.type == "heading_open":
            heading = tokens[i + 1].content.strip()
            headings.enter(int(token.tag[1]), heading)
            title = title or heading
            continue
        start, end = token.map
        chunk = "\n".join(lines[start:end]).strip("\n")
        if token.type == "html_block" and chunk.lstrip().startswith("<!--"):
            continue
        blocks.append(Block(chunk, headings.path, None, KIND_BY_TOKEN.get(token.type, "text")))
    return ParsedDocument(blocks=blocks, title=title)
