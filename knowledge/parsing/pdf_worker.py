"""Extract the text of one PDF, run as a separate process by knowledge.parsing.pdf.

Hostile PDFs (decompression bombs, deep page trees, endless content streams) meet
pypdf's limits here, and the parent adds a wall-clock timeout plus CPU and memory
rlimits, so the worst a bad file can do is kill this process.

Usage: python pdf_worker.py PATH MAX_PAGES MEMORY_BYTES CPU_SECONDS [PART PARTS]
Worker PART of PARTS extracts pages PART, PART + PARTS, ... (several run side by side on
a long PDF); part 0 also reads the outline and title. Prints one JSON object:
{"count": N, "pages": [[index, text], ...], "failed": [[index, why], ...],
"outline": [[title, page_index, depth], ...], "title": str} or {"error": str}, and on
stderr "count N" then "page I" as each page is done (the parent's progress).
A page whose text cannot be extracted is listed in "failed"; the others still count.
"""

import json
import resource
import sys

# Far below pypdf's 75 MB defaults: no page of a manual needs more.
STREAM_LIMIT = 20_000_000


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


def extract(path: str, max_pages: int, part: int = 0, parts: int = 1) -> dict:
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
    count = len(reader.pages)
    if count > max_pages:
        return {"error": f"the PDF has {count} pages; the limit is {max_pages} (KB_MAX_PDF_PAGES)."}
    _report(f"count {count}")
    pages, failed = [], []
    for index in range(part, count, parts):
        try:
            pages.append([index, _page_text(reader.pages[index])])
        except FileNotDecryptedError as exc:
            return {"error": f"the PDF is encrypted: {exc}"}
        except LimitReachedError as exc:  # the limit held: only this page is lost
            failed.append([index, _limit_message(exc)])
        except (MemoryError, RecursionError):
            raise  # the process itself is in danger: the whole file is refused (main)
        except Exception as exc:  # one broken page; the rest of the manual still counts
            failed.append([index, f"{type(exc).__name__}: {str(exc)[:150]}"])
        _report(f"page {index}")
    if part != 0:
        return {"count": count, "pages": pages, "failed": failed}
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
    return {"count": count, "pages": pages, "failed": failed, "outline": outline, "title": title}


def _limit_message(exc) -> str:
    return ("exceeds the parser's safety limits (a decompression bomb or hostile "
            f"structure: {str(exc)[:150]})")


def main() -> None:
    path, max_pages, memory_bytes, cpu_seconds = sys.argv[1], *map(int, sys.argv[2:5])
    part, parts = map(int, sys.argv[5:7]) if len(sys.argv) > 6 else (0, 1)
    _limit(memory_bytes, cpu_seconds)
    sys.setrecursionlimit(5000)
    from pypdf.errors import LimitReachedError

    try:
        result = extract(path, max_pages, part, parts)
    except LimitReachedError as exc:
        result = {"error": f"the PDF {_limit_message(exc)}; refusing it."}
    except MemoryError:
        result = {"error": "the PDF needs more memory to parse than allowed (hostile or broken?)."}
    except RecursionError:
        result = {"error": "the PDF is nested too deeply to parse (hostile or broken?)."}
    except Exception as exc:  # any other pypdf failure means a broken file for the user
        name = type(exc).__name__
        result = {"error": f"the PDF could not be read ({name}: {str(exc)[:200]})."}
    sys.stdout.write(json.dumps(result))


if __name__ == "__main__":
    main()
