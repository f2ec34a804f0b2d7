"""Knowledge-base speed through the real services: PDF pages/s stage by stage (`pdf`),
ingestion grown to N real chunks (`scale`) and query latency p50/p95 of
knowledge.retrieval.retrieve at that size (`scale`, `latency`). See kb_bench.py for the
commands."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import numpy as np

from benchmarks.kb_bench_setup import backend_line, setup_django

DEFAULT_PDFS = ["nvidia-cutlass/efficient_gemm.pdf", "rocm-docs/mi300.pdf",
                "enccs-gpu-programming/9-non-portable.pdf"]


def run_pdf(args) -> None:
    """Pages/s of PDFs through document_upload + document_process, stage by stage."""
    import tempfile

    setup_django(Path(tempfile.mkdtemp(prefix="kb-bench-pdf-")))
    from knowledge import ingestion
    from knowledge.embeddings import embed
    from knowledge.parsing.pdf import pdfium_available
    from knowledge.services import document_process, document_upload

    paths = [Path(p) for p in args.pdfs] or (
        [args.corpus / p for p in DEFAULT_PDFS] + sorted(Path("/usr/share/doc").glob("*/*.pdf")))
    embed(["warm up the model"])
    print(backend_line())
    print("PDF parser: " + ("PDFium (pypdfium2), pypdf for files it cannot read"
                            if pdfium_available() else "pypdf"))
    stages: dict[str, float] = {}
    real_prepare = ingestion.prepare

    def timed_report(report):
        last = {"stage": None, "at": time.perf_counter()}

        def wrapped(progress):
            now = time.perf_counter()
            if progress.stage != last["stage"]:
                if last["stage"]:
                    stages[last["stage"]] = stages.get(last["stage"], 0) + now - last["at"]
                last.update(stage=progress.stage, at=now)
            report(progress)

        def close():
            if last["stage"]:
                stages[last["stage"]] = stages.get(last["stage"], 0) + time.perf_counter() - last["at"]

        return wrapped, close

    def prepare(*a, report=lambda p: None, **kw):
        wrapped, close = timed_report(report)
        try:
            return real_prepare(*a, report=wrapped, **kw)
        finally:
            close()

    from knowledge.services import indexing
    indexing.prepare = prepare
    total_pages = total_chunks = 0
    started = time.perf_counter()
    for path in paths:
        t = time.perf_counter()
        document = document_upload(filename=path.name, data=path.read_bytes(),
                                   category="general-optimization")
        document = document_process(document.pk)
        took = time.perf_counter() - t
        total_pages += document.pages or 0
        total_chunks += document.chunk_count
        print(f"{path.name}: {document.pages} pages, {document.chunk_count} chunks in {took:.1f} s "
              f"= {(document.pages or 0) / took:.1f} pages/s ({document.status}: {document.message[:80]})")
    elapsed = time.perf_counter() - started
    print(f"all: {total_pages} pages, {total_chunks} chunks in {elapsed:.1f} s = "
          f"{total_pages / elapsed:.1f} pages/s end to end ({total_chunks / elapsed:.1f} chunks/s)")
    print("stages: " + ", ".join(f"{k} {v:.1f} s" for k, v in stages.items())
          + f", storing and the rest {elapsed - sum(stages.values()):.1f} s")
    print(f"load average after: {os.getloadavg()}")


def _real_texts(roots: list[Path], limit_chars: int) -> list[tuple[str, str]]:
    """(name, text) of real documentation on disk: Debian's changelogs and READMEs,
    the installed packages' docs; each file once."""
    import gzip

    out, seen, total = [], set(), 0
    suffixes = {".md", ".rst", ".txt", ".gz"}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if total >= limit_chars:
                return out
            if not path.is_file() or path.suffix not in suffixes or path.stat().st_size < 2000:
                continue
            try:
                raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
                text = raw.decode("utf-8")
            except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile):
                continue
            digest = hashlib.sha1(raw).hexdigest()
            if digest in seen:
                continue
            seen.add(digest)
            out.append((str(path), text[:400_000]))
            total += len(text[:400_000])
    return out


def _embed_with_cache(texts: list[str], cache_dir: Path) -> np.ndarray:
    """Embed for real, 2,000 at a time, keeping each part on disk so a rerun resumes."""
    from knowledge.embeddings import embed, model_id

    cache_dir.mkdir(parents=True, exist_ok=True)
    parts = []
    started, done = time.perf_counter(), 0
    for start in range(0, len(texts), 2000):
        batch = texts[start : start + 2000]
        key = hashlib.sha1((model_id() + "\0".join(batch)).encode()).hexdigest()[:20]
        path = cache_dir / f"{key}.npy"
        if path.exists():
            parts.append(np.load(path))
            continue
        t = time.perf_counter()
        vectors = embed(batch)
        np.save(path, vectors)
        parts.append(vectors)
        done += len(batch)
        print(f"  embedded {start + len(batch)}/{len(texts)} ({len(batch) / (time.perf_counter() - t):.1f} "
              f"chunks/s, load {os.getloadavg()[0]:.1f})", flush=True)
    if done:
        print(f"embedded {done} chunks for real in {time.perf_counter() - started:.0f} s "
              f"= {done / (time.perf_counter() - started):.1f} chunks/s")
    return np.concatenate(parts) if parts else np.zeros((0, 384), dtype=np.float32)


def run_scale(args) -> None:
    import tempfile

    data_dir = Path(tempfile.mkdtemp(prefix="kb-bench-"))
    setup_django(data_dir)
    from django.db import transaction

    from knowledge import store
    from knowledge.chunking import chunk_blocks
    from knowledge.embeddings import embed, token_counts
    from knowledge.evaluation import corpus_files
    from knowledge.ingestion import CHUNKING
    from knowledge.models import Chunk, Document
    from knowledge.parsing import parse_bytes
    from knowledge.retrieval_text import context_text
    from knowledge.services import document_ingest_file

    print(f"data dir {data_dir}")
    embed(["warm up the model"])
    print(backend_line())
    # 1. The corpus through the real services (parse, chunk, embed, store).
    files = corpus_files(args.corpus)
    started = time.perf_counter()
    documents = [document_ingest_file(f.path, category=f.category, vendor=f.vendor,
                                      hardware=f.hardware) for f in files]
    elapsed = time.perf_counter() - started
    chunks = sum(d.chunk_count for d in documents)
    chars = sum(len(c.text) for c in Chunk.objects.all())
    print(f"ingest corpus: {len(documents)} documents, {chunks} chunks, {chars / 1e6:.2f} M chars "
          f"in {elapsed:.1f} s = {chunks / elapsed:.1f} chunks/s, "
          f"{chars / 3000 / elapsed:.2f} page-equivalents/s (3,000 chars a page)")

    # 2. Grow to N chunks with real text from disk, chunked and embedded like a manual.
    needed = args.chunks - chunks
    extra: list[tuple[str, object]] = []  # (file name, ChunkDraft)
    t = time.perf_counter()
    for name, text in _real_texts(args.text_roots, limit_chars=needed * 1500):
        parsed = parse_bytes(Path(name).name, text.encode(), "text")
        extra.extend((name, c) for c in chunk_blocks(parsed.blocks, token_counts, CHUNKING))
        if len(extra) >= needed:
            break
    extra = extra[:needed]
    print(f"real text from {', '.join(map(str, args.text_roots))}: {len(extra)} chunks "
          f"({sum(len(c.text) for _, c in extra) / 1e6:.1f} M chars) parsed and chunked in "
          f"{time.perf_counter() - t:.1f} s")
    vectors = _embed_with_cache([context_text(Path(n).name, c.section, c.text) for n, c in extra],
                                args.cache)
    t = time.perf_counter()
    per_doc = 1000
    for start in range(0, len(extra), per_doc):
        part = extra[start : start + per_doc]
        with transaction.atomic():
            document = Document.objects.create(
                title=f"Real text {start // per_doc}", filename=f"text-{start}.txt", kind="text",
                vendor="", hardware=["generic"], category="general-optimization",
                content_hash=f"text-{start}", size_bytes=0, stored_path="", status="ready")
            rows = Chunk.objects.bulk_create([
                Chunk(document=document, ordinal=i, text=c.text, section=c.section[:1000], page=None)
                for i, (_, c) in enumerate(part)])
            store.add(store.CHUNKS, [str(r.pk) for r in rows], vectors[start : start + len(rows)],
                      [{"document_id": document.pk, "document": document.title, "vendor": "",
                        "hardware": ["generic"], "category": document.category,
                        "section": r.section[:500], "team_id": -1, "shared": True} for r in rows],
                      [r.text for r in rows])
    print(f"stored {len(extra)} real chunks (DB + Chroma HNSW) in {time.perf_counter() - t:.1f} s; "
          f"total chunks {Chunk.objects.count()}, vectors {store.count(store.CHUNKS)}")

    _measure_queries(args)


def run_latency(args) -> None:
    """Query latency only, on a data dir a previous `scale` run left behind."""
    setup_django(args.data_dir)
    _measure_queries(args)


def _measure_queries(args) -> None:
    from knowledge.embeddings import embed_query
    from knowledge.evaluation import load_questions
    from knowledge.models import Chunk
    from knowledge.retrieval import _vector_ranking, allowed_documents, lexical_snapshot, retrieve
    from knowledge.selectors import KnowledgeScope

    scope = KnowledgeScope.ALL  # the operator's view; a team's adds its team_id filter

    base = list(Chunk.objects.order_by("pk")[:800])
    t = time.perf_counter()
    lexical_snapshot()
    print(f"BM25 index build at {Chunk.objects.count()} chunks: {time.perf_counter() - t:.1f} s "
          "(once per process and after the chunk set changes)")
    questions = [q["question"] for q in load_questions(args.corpus / "questions.json")]
    sentences = [" ".join(c.text.split()[:14]) for c in base[:: max(1, len(base) // 100)]]
    queries = (questions + sentences) * (args.queries // (len(questions) + len(sentences)) + 1)
    queries = queries[: args.queries]
    hardware = [None, "h100", "mi300x", None]
    for q in queries[:5]:
        retrieve(q, scope=scope)  # warm up
    total, parts = [], {"embed": [], "bm25": [], "vector": [], "db": []}
    snapshot = lexical_snapshot()
    for i, q in enumerate(queries):
        hw = hardware[i % len(hardware)]
        t0 = time.perf_counter()
        retrieve(q, hardware=hw, k=5, scope=scope)
        total.append((time.perf_counter() - t0) * 1000)
        # Components, measured separately on the same query.
        t1 = time.perf_counter()
        v = embed_query(q)
        t2 = time.perf_counter()
        allowed = allowed_documents(scope, hw, None)
        snapshot.index.top(q, 50, snapshot.mask(allowed))
        t3 = time.perf_counter()
        ids = [cid for cid, _ in _vector_ranking(v, snapshot, scope, hw, None, allowed)]
        t4 = time.perf_counter()
        Chunk.objects.select_related("document").in_bulk(ids[:10])
        t5 = time.perf_counter()
        for key, a, b in (("embed", t1, t2), ("bm25", t2, t3), ("vector", t3, t4), ("db", t4, t5)):
            parts[key].append((b - a) * 1000)
    print(f"retrieve() at {Chunk.objects.count()} chunks, {len(queries)} queries "
          f"(mixed hardware filters): {_percentiles(total)}")
    for key, samples in parts.items():
        print(f"  {key:>6}: {_percentiles(samples)}")
    print(f"load average during the run: {os.getloadavg()}")


def _percentiles(samples_ms: list[float]) -> str:
    a = np.asarray(samples_ms)
    return f"p50 {np.percentile(a, 50):6.1f} ms  p95 {np.percentile(a, 95):6.1f} ms  max {a.max():6.1f} ms"
