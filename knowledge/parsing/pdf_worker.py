"""Extract the text of one PDF, run as a separate process by knowledge.parsing.pdf.

Two extractors give the same answer: PDFium (pypdfium2, C, ~15x pypdf's speed on our
manuals: BENCHMARKS.md, issue 20) reads ordinary files; pypdf, with its per-stream
output limits, reads the rest — a file PDFium cannot open (encrypted, broken) or one
with a Flate stream that inflates past STREAM_LIMIT (a decompression bomb: PDFium has
no such limit, pypdf loses only that page). The parent adds a wall-clock timeout plus
CPU and memory rlimits, so the worst a bad file can do is kill this process.

Usage: python pdf_worker.py PATH MAX_PAGES MEMORY_BYTES CPU_SECONDS [PART PARTS]
Worker PART of PARTS extracts pages PART, PART + PARTS, ... (several run side by side on
a long PDF); part 0 also reads the outline and title. Prints one JSON object:
{"count": N, "pages": [[index, text], ...], "failed": [[index, why], ...],
"outline": [[title, page_index, depth], ...], "title": str} or {"error": str}, and on
stderr "count N" then "page I" as each page is done (the parent's progress).
A page whose text cannot be extracted is listed in "failed"; the others still count.
"""

import json
import os
import re
import resource
import sys
import zlib
from typing import Callable

# Far below pypdf's 75 MB defaults: no page of a manual needs more.
STREAM_LIMIT = 20_000_000
_STREAM_START = re.compile(rb"(?<!end)stream\r?\n")


def _limit(memory_bytes: int, cpu_seconds: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))


def _outline(reader, items, depth, out):
    for item in items:
        if isinstance(item, list):
            _outline(reader, item, depth + 1, out)
            continue
        try:
            page = reader.get_destination_page_number(item)
        except Exception:
            continue
        if page is not None and page >= 0:
            out.append([str(item.title), page, depth])


def _report(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _page_text(page) -> str:
    return page.extract_text() or ""


def import_pdfium():
    """PDFium's bindings, or None where they are not installed or KB_PDF_PARSER=pypdf
    (pypdf then reads every file). Called after the rlimits: an import that fails for
    memory fails the worker."""
    if not pdfium_wanted():
        return None
    try:
        import pypdfium2
    except ImportError:
        return None
    return pypdfium2


def pdfium_wanted() -> bool:
    choice = os.environ.get("KB_PDF_PARSER", "auto").strip().lower()
    if choice not in ("auto", "pypdf"):
        raise ValueError(f"KB_PDF_PARSER={choice!r}: use auto or pypdf")
    return choice == "auto"


def extract(path: str, max_pages: int, part: int = 0, parts: int = 1, pdfium=None) -> dict:
    if pdfium is not None and not has_oversized_stream(path):
        try:
            document = pdfium.PdfDocument(path)
        except pdfium.PdfiumError:
            pass  # pypdf says why (password, broken file) in its own words
        else:
            try:
                return _extract_pdfium(document, max_pages, part, parts)
            finally:
                document.close()
    return _extract_pypdf(path, max_pages, part, parts)


def has_oversized_stream(path: str, limit: int = STREAM_LIMIT) -> bool:
    """Whether some Flate stream of the file inflates past `limit` (inflating at most
    limit + 1 bytes of each, so the check itself stays bounded). Images are skipped:
    extracting text never decodes them."""
    with open(path, "rb") as handle:
        data = handle.read()
    view = memoryview(data)
    for match in _STREAM_START.finditer(data):
        header_start = data.rfind(b" obj", 0, match.start())
        if header_start >= 0 and b"/Image" in data[header_start: match.start()]:
            continue
        end = data.find(b"endstream", match.end())
        try:
            inflated = zlib.decompressobj().decompress(view[match.end(): end if end > 0 else None],
                                                       limit + 1)
        except zlib.error:
            continue  # not Flate (an image, plain text) or not a stream at all
        if len(inflated) > limit:
            return True
    return False


def _extract_pdfium(document, max_pages: int, part: int, parts: int) -> dict:
    result = _extract_pages(len(document), max_pages, part, parts,
                            lambda index: _pdfium_page_text(document, index), _page_failure)
    if "error" in result or part != 0:
        return result
    outline = []
    for bookmark in document.get_toc():
        destination = bookmark.get_dest()
        page = destination.get_index() if destination is not None else None
        if page is not None and page >= 0:
            outline.append([bookmark.get_title(), page, bookmark.level])
    return {**result, "outline": outline, "title": document.get_metadata_value("Title") or ""}


def _extract_pages(count: int, max_pages: int, part: int, parts: int,
                   read: Callable[[int], str], why: Callable[[Exception], str]) -> dict:
    """This worker's pages (part, part + parts, ...), each read by `read(index)`; a page
    that raises is listed in "failed" with `why(exc)`, which may re-raise to stop."""
    if count > max_pages:
        return {"error": f"the PDF has {count} pages; the limit is {max_pages} (KB_MAX_PDF_PAGES)."}
    _report(f"count {count}")
    pages, failed = [], []
    for index in range(part, count, parts):
        try:
            pages.append([index, read(index)])
        except (MemoryError, RecursionError):
            raise  # the process itself is in danger: the whole file is refused (main)
        except Exception as exc:  # one broken page; the rest of the manual still counts
            failed.append([index, why(exc)])
        _report(f"page {index}")
    return {"count": count, "pages": pages, "failed": failed}


def _page_failure(exc: Exception) -> str:
    return f"{type(exc).__name__}: {str(exc)[:150]}"


def _pdfium_page_text(document, index: int) -> str:
    page = document[index]
    try:
        textpage = page.get_textpage()
        try:
            text = textpage.get_text_range()
        finally:
            textpage.close()
    finally:
        page.close()
    # PDFium ends lines with CRLF and joins a line ending in a hyphen to the next one,
    # marking the join with U+FFFE (U+0002 in older builds); pypdf keeps "-" and the break.
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.replace("\ufffe", "-\n").replace("\x02", "-\n")


def _extract_pypdf(path: str, max_pages: int, part: int, parts: int) -> dict:
    import pypdf
    from pypdf.errors import FileNotDecryptedError, LimitReachedError, PdfReadError

    pypdf.overwrite_configuration(
        zlib_maximum_output_length=STREAM_LIMIT,
        lzw_maximum_output_length=STREAM_LIMIT,
        run_length_maximum_output_length=STREAM_LIMIT,
        array_based_stream_maximum_output_length=STREAM_LIMIT,
        jbig2_maximum_output_length=STREAM_LIMIT,
        brotli_maximum_output_length=STREAM_LIMIT,
        image_maximum_buffer_size=STREAM_LIMIT,
        jbig2dec_binary=None,
    )
    reader = pypdf.PdfReader(path, strict=False)
    if reader.is_encrypted:
        # Many PDFs carry only an owner password: an empty user password opens them.
        try:
            opened = reader.decrypt("")
        except Exception:
            opened = 0
        if not opened:
            return {"error": "the PDF is encrypted with a password; upload an unencrypted copy."}

    def why(exc: Exception) -> str:
        if isinstance(exc, FileNotDecryptedError):
            raise exc  # no page of it can be read: the whole file is refused
        if isinstance(exc, LimitReachedError):  # the limit held: only this page is lost
            return _limit_message(exc)
        return _page_failure(exc)

    try:
        result = _extract_pages(len(reader.pages), max_pages, part, parts,
                                lambda index: _page_text(reader.pages[index]), why)
    except FileNotDecryptedError as exc:
        return {"error": f"the PDF is encrypted: {exc}"}
    if "error" in result or part != 0:
        return result
    outline = []
    try:
        _outline(reader, reader.outline, 0, outline)
    except (PdfReadError, RecursionError, KeyError, TypeError, ValueError):
        outline = []
    title = ""
    try:
        title = str((reader.metadata or {}).get("/Title") or "")
    except Exception:
        pass
    return {**result, "outline": outline, "title": title}


def _limit_message(exc) -> str:
    return ("exceeds the parser's safety limits (a decompression bomb or hostile "
            f"structure: {str(exc)[:150]})")


def _failure(exc: Exception) -> str:
    errors = sys.modules.get("pypdf.errors")  # imported only where pypdf read the file
    if errors is not None and isinstance(exc, errors.LimitReachedError):
        return f"the PDF {_limit_message(exc)}; refusing it."
    # Any other failure means a broken file for the user.
    return f"the PDF could not be read ({type(exc).__name__}: {str(exc)[:200]})."


def main() -> None:
    path, max_pages, memory_bytes, cpu_seconds = sys.argv[1], *map(int, sys.argv[2:5])
    part, parts = map(int, sys.argv[5:7]) if len(sys.argv) > 6 else (0, 1)
    _limit(memory_bytes, cpu_seconds)
    sys.setrecursionlimit(5000)
    pdfium = import_pdfium()
    try:
        result = extract(path, max_pages, part, parts, pdfium)
    except MemoryError:
        result = {"error": "the PDF needs more memory to parse than allowed (hostile or broken?)."}
    except RecursionError:
        result = {"error": "the PDF is nested too deeply to parse (hostile or broken?)."}
    except Exception as exc:
        result = {"error": _failure(exc)}
    sys.stdout.write(json.dumps(result))


if __name__ == "__main__":
    main()
