"""Parse a PDF in a child process with limits, then split its pages into blocks.

Sections come from the PDF outline (bookmarks): a bookmark's title, found as a line on
its page, starts a new section there; pages before any bookmark keep the last section.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

from knowledge.errors import KnowledgeInputError
from knowledge.parsing.blocks import Block, HeadingPath, ParsedDocument

WORKER = Path(__file__).with_name("pdf_worker.py")
MEMORY_BYTES = 1536 * 1024 * 1024
TIMEOUT_S = 300


def parse_pdf(name: str, data: bytes, *, max_pages: int, timeout_s: float = TIMEOUT_S,
              memory_bytes: int = MEMORY_BYTES) -> ParsedDocument:
    result = run_worker(name, data, max_pages=max_pages, timeout_s=timeout_s,
                        memory_bytes=memory_bytes)
    return pages_to_document(result["pages"], result.get("outline", []), result.get("title", ""))


def run_worker(name: str, data: bytes, *, max_pages: int, timeout_s: float,
               memory_bytes: int) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".pdf") as handle:
        handle.write(data)
        handle.flush()
        command = [sys.executable, "-I", str(WORKER), handle.name, str(max_pages),
                   str(memory_bytes), str(max(1, math.ceil(timeout_s)))]
        try:
            proc = subprocess.run(command, capture_output=True, timeout=timeout_s, text=True)
        except subprocess.TimeoutExpired:
            raise KnowledgeInputError(
                f"{name}: parsing the PDF took longer than {timeout_s:g} s; "
                "the file is too complex or hostile."
            ) from None
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError:
        # Killed by an rlimit (memory, CPU) or crashed: no JSON came back.
        raise KnowledgeInputError(
            f"{name}: the PDF parser stopped (exit status {proc.returncode}) — the file "
            "exceeds the memory or CPU limits for parsing, or is broken."
        ) from None
    if "error" in result:
        raise KnowledgeInputError(f"{name}: {result['error']}")
    return result


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def pages_to_document(pages: list[str], outline: list, title: str = "") -> ParsedDocument:
    by_page: dict[int, list[tuple[str, int]]] = {}
    for entry_title, page_index, depth in outline:
        by_page.setdefault(page_index, []).append((entry_title, depth))
    headings = HeadingPath()
    blocks: list[Block] = []
    for index, page_text in enumerate(pages):
        pending = list(by_page.get(index, []))
        current: list[str] = []
        for line in page_text.splitlines():
            match = next((p for p in pending if _norm(p[0]) == _norm(line)), None)
            if match:
                # Entries listed before the match on this page also start here.
                while pending:
                    entry = pending.pop(0)
                    if current:
                        blocks.append(Block("\n".join(current), headings.path, index + 1, "lines"))
                        current = []
                    headings.enter(entry[1] + 1, entry[0])
                    if entry is match:
                        break
            current.append(line)
        for entry in pending:  # bookmark whose title is not a line of its page
            headings.enter(entry[1] + 1, entry[0])
        if current:
            section = headings.path or _slide_title(current)
            blocks.append(Block("\n".join(current), section, index + 1, "lines"))
    if not title and outline:
        title = outline[0][0]
    return ParsedDocument(blocks=blocks, title=title, pages=len(pages))


def _slide_title(lines: list[str]) -> str:
    """Without bookmarks, a page's short first line (a slide title) names its section."""
    first = next((line.strip() for line in lines if line.strip()), "")
    return first if len(first) <= 80 else ""
