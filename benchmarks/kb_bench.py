"""Knowledge-base benchmarks (prints numbers; results go to BENCHMARKS.md).

  python benchmarks/kb_bench.py variants [--corpus ../shared/corpus]
      recall@5 of chunking / heading-context / ranking variants on the labelled corpus
      (pure pipeline: same parser, chunker, model, BM25 and fusion as the app; exact
      cosine search in numpy in place of Chroma's HNSW).
  python benchmarks/kb_bench.py pdf [PDF ...]
      PDF pages/s end to end through the real services (parse in worker processes, chunk,
      embed, Chroma + DB), with the time of each stage; default: the corpus PDFs and any
      PDF manual under /usr/share/doc. KB_PDF_PARSER=pypdf measures the pypdf parser.
  python benchmarks/kb_bench.py diagnostics
      how often the prompt of a search node carries the passage (and the section) it needs,
      with diagnostics-keyed retrieval and with a plain query (knowledge.evaluation.NODE_CASES).
  python benchmarks/kb_bench.py scale [--chunks 50000]
      ingestion on the corpus through the real services, then N real chunks (the corpus's
      and real text found on disk: /usr/share/doc, the venv's package docs), each embedded
      for real (vectors cached under --cache so a rerun resumes), then query latency
      p50/p95 of knowledge.retrieval.retrieve at N chunks (real Chroma, real BM25).
  python benchmarks/kb_bench.py latency DATA_DIR
      the query-latency part again, on the data dir a `scale` run left.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
DEFAULT_CORPUS = REPO.parent / "shared" / "corpus"


def _embed_cached(texts: list[str], cache: dict) -> np.ndarray:
    from knowledge.embeddings import embed

    keys = [hashlib.sha1(t.encode()).hexdigest() for t in texts]
    missing = [t for t, k in zip(texts, keys) if k not in cache]
    if missing:
        for k, v in zip([hashlib.sha1(t.encode()).hexdigest() for t in missing], embed(missing)):
            cache[k] = v
    return np.stack([cache[k] for k in keys])


def run_variants(corpus: Path, only: str | None = None) -> None:
    from knowledge.chunking import ChunkingConfig, chunk_blocks
    from knowledge.embeddings import embed_query, token_counts
    from knowledge.evaluation import corpus_files, evidence_hit, load_questions
    from knowledge.filetypes import detect_kind
    from knowledge.fusion import reciprocal_rank_fusion
    from knowledge.lexical import BM25Index
    from knowledge.parsing import parse_bytes
    from knowledge.retrieval_text import context_text

    questions = load_questions(corpus / "questions.json")
    print(_backend_line())
    parsed = []
    for f in corpus_files(corpus):
        data = f.path.read_bytes()
        parsed.append((f, parse_bytes(f.relative, data, detect_kind(f.relative, data[:2048]))))
    query_vectors = {q["id"]: embed_query(q["question"]) for q in questions}
    cache: dict = {}
    configs = [
        ("128/25", ChunkingConfig(128, 25, 40)),
        ("200/40", ChunkingConfig(200, 40, 60)),
        ("230/50", ChunkingConfig(230, 50, 60)),
    ]
    if only:
        configs = [c for c in configs if c[0] == only]
    methods = ["vector", "bm25", "rrf60", "rrf20", "rrf10", "rrf60-v2"]
    print(f"{'chunks':>8} {'context':>9} {'n':>5} " + " ".join(f"{m:>8}" for m in methods))
    for label, config in configs:
        chunks = []
        for f, doc in parsed:
            for c in chunk_blocks(doc.blocks, token_counts, config):
                chunks.append((doc.title or f.relative, c))
        for context in (("title+sec",) if only else ("none", "section", "title+sec")):
            texts = [context_text(title, c.section, c.text, context) for title, c in chunks]
            vectors = _embed_cached(texts, cache)
            bm25 = BM25Index(texts)
            raw = [c.text for _, c in chunks]
            hits = dict.fromkeys(methods, 0)
            for q in questions:
                sims = vectors @ query_vectors[q["id"]]
                vec_rank = list(np.argsort(-sims)[:50])
                lex_rank = [r for r, _ in bm25.top(q["question"], 50)]
                rankings = {
                    "vector": vec_rank, "bm25": lex_rank,
                    "rrf60": reciprocal_rank_fusion([vec_rank, lex_rank], k=60),
                    "rrf20": reciprocal_rank_fusion([vec_rank, lex_rank], k=20),
                    "rrf10": reciprocal_rank_fusion([vec_rank, lex_rank], k=10),
                    "rrf60-v2": reciprocal_rank_fusion([vec_rank, lex_rank], weights=[2, 1]),
                }
                for name, ranking in rankings.items():
                    top = [r if not isinstance(r, tuple) else r[0] for r in ranking[:5]]
                    hits[name] += evidence_hit(q, [raw[r] for r in top])
            n = len(questions)
            print(f"{label:>8} {context:>9} {len(chunks):>5} "
                  + " ".join(f"{hits[m] / n:>8.3f}" for m in methods), flush=True)


def _setup_django(data_dir: Path) -> None:
    os.environ["KERNELHUB_DATA_DIR"] = str(data_dir)
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("CHROMA_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kernelhub.settings")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def _percentiles(samples_ms: list[float]) -> str:
    a = np.asarray(samples_ms)
    return f"p50 {np.percentile(a, 50):6.1f} ms  p95 {np.percentile(a, 95):6.1f} ms  max {a.max():6.1f} ms"


def _backend_line() -> str:
    from knowledge.embeddings import EMBED_THREADS, backend_status

    status = backend_status()
    return (f"embedding backend {status.name} ({status.reason}); model id {status.model_id}; "
            f"{EMBED_THREADS} embedding threads; load average {os.getloadavg()[0]:.1f}")


DEFAULT_PDFS = ["nvidia-cutlass/efficient_gemm.pdf", "rocm-docs/mi300.pdf",
                "enccs-gpu-programming/9-non-portable.pdf"]


def run_pdf(args) -> None:
    """Pages/s of PDFs through document_upload + document_process, stage by stage."""
    import tempfile

    _setup_django(Path(tempfile.mkdtemp(prefix="kb-bench-pdf-")))
    from knowledge import ingestion
    from knowledge.embeddings import embed
    from knowledge.parsing.pdf import pdfium_available
    from knowledge.services import document_process, document_upload

    paths = [Path(p) for p in args.pdfs] or (
        [args.corpus / p for p in DEFAULT_PDFS] + sorted(Path("/usr/share/doc").glob("*/*.pdf")))
    embed(["warm up the model"])
    print(_backend_line())
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


def run_diagnostics(args) -> None:
    """Keyed vs plain retrieval for the search nodes of knowledge.evaluation.NODE_CASES."""
    import tempfile

    _setup_django(Path(tempfile.mkdtemp(prefix="kb-bench-diag-")))
    from knowledge.context import KnowledgeContextProvider
    from knowledge.evaluation import (
        NODE_CASES,
        corpus_files,
        needed_section,
        node_retrieval,
        prompt_has_passage,
        prompt_has_section,
    )
    from knowledge.selectors import KnowledgeScope
    from knowledge.services import document_ingest_file
    from search_engine.hardware import get_target
    from search_engine.synthesis.base import MemoryView, NodeView, SynthesisRequest
    from search_engine.synthesis.llm import build_prompt

    for f in corpus_files(args.corpus):
        document_ingest_file(f.path, category=f.category, vendor=f.vendor, hardware=f.hardware)
    print(_backend_line())
    provider = KnowledgeContextProvider(skills=0, scope=KnowledgeScope.ALL)
    for k in (4, 5, 8):
        for keyed in (True, False):
            passages = sections = 0
            for case in NODE_CASES:
                query, found = node_retrieval(provider, case, keyed=keyed, k=k)
                prompt = build_prompt(SynthesisRequest(
                    problem_source="", target=get_target(case[1]),
                    parent=NodeView(0, "", {"synthesizer": "reference"}, "reference"),
                    memory=MemoryView("restart"), context=found, context_query=query))
                passages += prompt_has_passage(prompt, case)
                sections += prompt_has_section(prompt, needed_section(case))
            n = len(NODE_CASES)
            print(f"k={k} {'keyed' if keyed else 'plain'}: needed passage in the prompt "
                  f"{passages}/{n}, a passage of its section {sections}/{n}")


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
    _setup_django(data_dir)
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
    print(_backend_line())
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
    _setup_django(args.data_dir)
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
        ids = _vector_ranking(v, snapshot, scope, hw, None, allowed)  # Chroma query + our filter
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    v = sub.add_parser("variants")
    v.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    v.add_argument("--only", help="one chunking label, e.g. 230/50 (title+sec context only)")
    s = sub.add_parser("scale")
    s.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    s.add_argument("--chunks", type=int, default=50_000)
    s.add_argument("--queries", type=int, default=200)
    s.add_argument("--text-roots", type=Path, nargs="+",
                   default=[Path("/usr/share/doc"), Path(sys.prefix) / "lib"])
    s.add_argument("--cache", type=Path, default=Path(os.environ.get("KB_BENCH_CACHE", "/tmp/kb-bench-vectors")))
    p = sub.add_parser("pdf")
    p.add_argument("pdfs", nargs="*")
    p.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    d = sub.add_parser("diagnostics")
    d.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    lat = sub.add_parser("latency")
    lat.add_argument("data_dir", type=Path, help="the data dir a `scale` run printed")
    lat.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    lat.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    if args.mode == "variants":
        run_variants(args.corpus, args.only)
    elif args.mode == "pdf":
        run_pdf(args)
    elif args.mode == "diagnostics":
        run_diagnostics(args)
    elif args.mode == "latency":
        run_latency(args)
    else:
        run_scale(args)


if __name__ == "__main__":
    main()
