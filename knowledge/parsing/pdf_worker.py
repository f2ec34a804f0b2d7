"""Extract the text of one PDF, run as a separate process by knowledge.parsing.pdf.

Hostile PDFs (decompression bombs, deep page trees, endless content streams) meet
pypdf's limits here, and the parent adds a wall-clock timeout plus CPU and memory
rlimits, so the worst a bad file can do is kill this process.

Usage: python pdf_worker.py PATH MAX_PAGES MEMORY_BYTES CPU_SECONDS
Prints one JSON object: {"pages": [...], "outline": [[title, page_index, depth], ...],
"title": str} or {"error": str}.
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


def extract(path: str, max_pages: int) -> dict:
    import pypdf
    from pypdf.errors import FileNotDecryptedError, PdfReadError

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
    pages = []
    for page in reader.pages:
        try:
            pages.append(page.extract_text() or "")
        except (FileNotDecryptedError,) as exc:
            return {"error": f"the PDF is encrypted: {exc}"}
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
    return {"pages": pages, "outline": outline, "title": title}


def main() -> None:
    path, max_pages, memory_bytes, cpu_seconds = sys.argv[1], *map(int, sys.argv[2:5])
    _limit(memory_bytes, cpu_seconds)
    sys.setrecursionlimit(5000)
    from pypdf.errors import LimitReachedError

    try:
        result = extract(path, max_pages)
    except LimitReachedError as exc:
        result = {"error": "the PDF exceeds the parser's safety limits (a decompression bomb "
                  f"or hostile structure: {str(exc)[:150]}); refusing it."}
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
