"""reStructuredText to blocks: section titles (underlined, optionally overlined), literal
and code blocks, tables and directive bodies.

docutils would choke on Sphinx-only directives and roles, and we only need structure,
so this walks the lines: a title is a text line followed by a line of one repeated
punctuation character at least as long; levels follow the order styles first appear.
"""

from __future__ import annotations

import re

from knowledge.parsing.blocks import Block, HeadingPath, ParsedDocument

ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}\s*$")
CODE_DIRECTIVE = re.compile(r"^\s*\.\.\s+(code-block|code|sourcecode|literalinclude|math)::")
TABLE_DIRECTIVE = re.compile(r"^\s*\.\.\s+(list-table|csv-table|table)::")
DIRECTIVE = re.compile(r"^\.\.\s+[\w:-]+::")
FOOTNOTE = re.compile(r"^\.\.\s+\[[^\]]+\]")
# Directives whose body is not prose for a reader.
SKIPPED_DIRECTIVE = re.compile(r"^\.\.\s+(meta|image|figure|toctree|raw|include|only|highlight)::")
GRID_TABLE_LINE = re.compile(r"^\s*[+|]")
SIMPLE_TABLE_RULE = re.compile(r"^\s*=+(\s+=+)+\s*$")


def _is_title(lines: list[str], i: int, overlined: bool = False) -> bool:
    """A one-line paragraph underlined by a run of one punctuation character.

    docutils wants the adornment as long as the title but only warns when it is shorter,
    and real documents have short ones, so length is not checked; the line before must be
    blank (or the overline), which keeps "text / ----" inside paragraphs out.
    """
    text = lines[i]
    if not text.strip() or text[0].isspace() or ADORNMENT.match(text) or i + 1 >= len(lines):
        return False
    if not overlined and i > 0 and lines[i - 1].strip():
        return False
    return bool(ADORNMENT.match(lines[i + 1]))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def parse_rst(text: str) -> ParsedDocument:
    lines = text.expandtabs(4).splitlines()
    headings = HeadingPath()
    styles: list[tuple[str, bool]] = []
    blocks: list[Block] = []
    paragraph: list[str] = []
    title = ""
    i = 0

    def flush(kind: str = "text") -> None:
        if paragraph and any(line.strip() for line in paragraph):
            blocks.append(Block("\n".join(paragraph).strip("\n"), headings.path, None, kind))
        paragraph.clear()

    while i < len(lines):
        line = lines[i]
        overline = (bool(ADORNMENT.match(line)) and i + 2 < len(lines)
                    and _is_title(lines, i + 1, overlined=True))
        if overline or _is_title(lines, i):
            flush()
            if overline:
                i += 1
            char = lines[i + 1].strip()[0]
            style = (char, overline)
            if style not in styles:
                styles.append(style)
            heading = lines[i].strip()
            headings.enter(styles.index(style) + 1, heading)
            title = title or heading
            i += 2
            continue
        if not line.strip():
            flush()
            i += 1
            continue
        # An explicit-markup line at column 0 starts a directive/comment with an indented body.
        if line.startswith(".. "):
            flush()
            body_end = _indented_body_end(lines, i + 1)
            if CODE_DIRECTIVE.match(line) or TABLE_DIRECTIVE.match(line):
                kind = "table" if TABLE_DIRECTIVE.match(line) else "code"
                body = [b for b in lines[i + 1 : body_end] if not _is_option(b)]
                paragraph.extend([line] + body)
                flush(kind)
            elif (DIRECTIVE.match(line) and not SKIPPED_DIRECTIVE.match(line)) or FOOTNOTE.match(line):
                # Admonitions, other directives and footnotes: their body is prose.
                # (Anything else is a comment, a label or a substitution definition.)
                paragraph.extend(lines[i:body_end])
                flush()
            i = body_end
            continue
        if GRID_TABLE_LINE.match(line) and line.strip().startswith("+-") or SIMPLE_TABLE_RULE.match(line):
            flush()
            end = i + 1
            while end < len(lines) and lines[end].strip():
                end += 1
            # A simple table has blank-free rows between rules; take rows up to the closing rule.
            paragraph.extend(lines[i:end])
            flush("table")
            i = end
            continue
        paragraph.append(line)
        i += 1
        # A paragraph ending in "::" introduces a literal block.
        if line.rstrip().endswith("::") and not line.strip().startswith(".."):
            flush()
            j = i
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j < len(lines) and _indent(lines[j]) > _indent(line):
                end = _indented_body_end(lines, j, _indent(line))
                paragraph.extend(lines[j:end])
                flush("code")
                i = end
    flush()
    return ParsedDocument(blocks=blocks, title=title)


def _is_option(line: str) -> bool:
    return bool(re.match(r"^\s+:[\w-]+:", line))


def _indented_body_end(lines: list[str], start: int, base_indent: int = 0) -> int:
    """Index after the block indented deeper than `base_indent` that begins at `start`."""
    end = start
    last_content = start
    while end < len(lines):
        line = lines[end]
        if line.strip():
            if _indent(line) <= base_indent:
                break
            last_content = end + 1
        end += 1
    return max(last_content, start)
