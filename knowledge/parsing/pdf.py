"""Parse a PDF in a child process with limits, then split its pages into blocks.

Sections come from the PDF outline (bookmarks): a bookmark's title, found as a line on
its page, starts a new section there; pages before any bookmark keep the last section.
"""

from __future__ import annotations

import json
import math
import os
import selectors
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from knowledge.errors import KnowledgeInputError
from knowledge.parsing.blocks import Block, HeadingPath, ParsedDocument

WORKER = Path(__file__).with_name("pdf_worker.py")
MEMORY_BYTES = 1536 * 1024 * 1024
TIMEOUT_S = 300
# Below this size one process parses the whole file: a second one would cost more to start
# than it saves. Above it, one worker per core (KB_PDF_WORKERS) each takes every n-th page.
# PDFium reads ~300 text pages/s in one process, so only a very large file pays for a
# second one (each costs ~0.1 s to start); pypdf, ~15x slower, pays for it far sooner.
PARALLEL_MIN_BYTES = 256 * 1024
PARALLEL_MIN_BYTES_PDFIUM = 8 * 1024 * 1024
PDF_WORKERS = int(os.environ.get("KB_PDF_WORKERS", str(min(4, os.cpu_count() or 1))))

PageProgress = Callable[[int, int], None]  # (pages parsed, pages in the file)


def parse_pdf(name: str, data: bytes, *, max_pages: int, timeout_s: float = TIMEOUT_S,
              memory_bytes: int = MEMORY_BYTES, workers: int | None = None,
              on_page: PageProgress = lambda done, total: None) -> ParsedDocument:
    if workers is None:
        workers = PDF_WORKERS if len(data) >= _parallel_min_bytes() else 1
    result = run_workers(name, data, max_pages=max_pages, timeout_s=timeout_s,
                         memory_bytes=memory_bytes, workers=max(1, workers), on_page=on_page)
    document = pages_to_document(result["pages"], result.get("outline", []), result.get("title", ""))
    document.failed_pages = [(index + 1, why) for index, why in result["failed"]]
    return document


def pdfium_available() -> bool:
    """Whether the workers read ordinary files with PDFium (else with pypdf)."""
    import importlib.util

    from knowledge.parsing.pdf_worker import pdfium_wanted

    return pdfium_wanted() and importlib.util.find_spec("pypdfium2") is not None


def _parallel_min_bytes() -> int:
    return PARALLEL_MIN_BYTES_PDFIUM if pdfium_available() else PARALLEL_MIN_BYTES


def run_workers(name: str, data: bytes, *, max_pages: int, timeout_s: float, memory_bytes: int,
                workers: int, on_page: PageProgress) -> dict:
    """Run the workers side by side, report pages as they finish, merge their answers.

    Any exception (a timeout, a progress callback that cancels) kills every worker."""
    with tempfile.TemporaryDirectory(prefix="kb-pdf-") as folder:
        source = Path(folder) / "in.pdf"
        source.write_bytes(data)
        procs, outputs = [], []
        try:
            for part in range(workers):
                outputs.append(open(Path(folder) / f"out-{part}.json", "w+"))
                command = [sys.executable, "-I", str(WORKER), str(source), str(max_pages),
                           str(memory_bytes), str(max(1, math.ceil(timeout_s))), str(part),
                           str(workers)]
                procs.append(subprocess.Popen(command, stdout=outputs[-1], stderr=subprocess.PIPE,
                                              text=True))
            _follow(name, procs, timeout_s, on_page)
            answers = [_answer(name, proc, out) for proc, out in zip(procs, outputs)]
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
                proc.stderr.close()
            for out in outputs:
                out.close()
    return _merge(answers)


def _follow(name: str, procs: list, timeout_s: float, on_page: PageProgress) -> None:
    """Read the workers' "count N" / "page I" lines until all of them exit."""
    deadline = time.monotonic() + timeout_s
    total, done = 0, 0
    with selectors.DefaultSelector() as selector:
        for proc in procs:
            selector.register(proc.stderr, selectors.EVENT_READ)
        open_streams = len(procs)
        while open_streams:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _too_slow(name, timeout_s)
            for key, _ in selector.select(timeout=min(left, 1.0)):
                line = key.fileobj.readline()
                if not line:
                    selector.unregister(key.fileobj)
                    open_streams -= 1
                elif line.startswith("count "):
                    total = int(line.split()[1])
                elif line.startswith("page "):
                    done += 1
                    on_page(done, total)
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise _too_slow(name, timeout_s) from None


def _too_slow(name: str, timeout_s: float) -> KnowledgeInputError:
    return KnowledgeInputError(f"{name}: parsing the PDF took longer than {timeout_s:g} s; "
                               "the file is too complex or hostile.")


def _answer(name: str, proc, out) -> dict:
    out.seek(0)
    try:
        result = json.loads(out.read())
    except json.JSONDecodeError:
        # Killed by an rlimit (memory, CPU) or crashed: no JSON came back.
        raise KnowledgeInputError(
            f"{name}: the PDF parser stopped (exit status {proc.returncode}) — the file "
            "exceeds the memory or CPU limits for parsing, or is broken."
        ) from None
    if "error" in result:
        raise KnowledgeInputError(f"{name}: {result['error']}")
    return result


def _merge(answers: list[dict]) -> dict:
    count = answers[0]["count"]
    texts = [""] * count
    failed = []
    for answer in answers:
        for index, text in answer["pages"]:
            texts[index] = text
        failed.extend(answer["failed"])
    return {"pages": texts, "failed": sorted(failed), "outline": answers[0].get("outline", []),
            "title": answers[0].get("title", "")}


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
