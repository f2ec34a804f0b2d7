"""Knowledge-base benchmarks (prints numbers; results go to BENCHMARKS.md).

  python benchmarks/kb_bench.py variants [--corpus ../shared/corpus]
      recall@5 of chunking / heading-context / ranking variants on the labelled corpus
      (pure pipeline: same parser, chunker, model, BM25 and fusion as the app; exact
      cosine search in numpy in place of Chroma's HNSW).
  python benchmarks/kb_bench.py scale [--chunks 50000]
      ingestion pages/s on the corpus through the real services, then query latency
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


def _perturb(text: str, rng: np.random.Generator, donor: str) -> str:
    """A new, plausible chunk: drop ~15% of words and splice in a run from another chunk."""
    words = text.split()
    kept = [w for w in words if rng.random() > 0.15]
    donor_words = donor.split()
    start = int(rng.integers(0, max(1, len(donor_words) - 30)))
    at = int(rng.integers(0, len(kept) + 1))
    return " ".join(kept[:at] + donor_words[start : start + 30] + kept[at:])


def _percentiles(samples_ms: list[float]) -> str:
    a = np.asarray(samples_ms)
    return f"p50 {np.percentile(a, 50):6.1f} ms  p95 {np.percentile(a, 95):6.1f} ms  max {a.max():6.1f} ms"


def run_scale(args) -> None:
    import tempfile

    data_dir = Path(tempfile.mkdtemp(prefix="kb-bench-"))
    _setup_django(data_dir)
    from django.db import transaction

    from knowledge import store
    from knowledge.embeddings import embed, embed_query
    from knowledge.evaluation import corpus_files, load_questions
    from knowledge.models import Chunk, Document
    from knowledge.retrieval import lexical_snapshot, retrieve
    from knowledge.retrieval_text import context_text
    from knowledge.services import document_ingest_file

    print(f"data dir {data_dir}; torch threads {__import__('torch').get_num_threads()}")
    embed(["warm up the model"])
    # 1. Ingestion through the real services (parse in a subprocess, chunk, embed, store).
    files = corpus_files(args.corpus)
    started = time.perf_counter()
    documents = [document_ingest_file(f.path, category=f.category, vendor=f.vendor,
                                      hardware=f.hardware) for f in files]
    elapsed = time.perf_counter() - started
    pdf_pages = sum(d.pages or 0 for d in documents if d.kind == "pdf")
    chars = sum(len(c.text) for c in Chunk.objects.all())
    chunks = sum(d.chunk_count for d in documents)
    pdf_time = 0.0
    for d in [d for d in documents if d.kind == "pdf"]:
        t = time.perf_counter()
        from knowledge.ingestion import prepare
        prepare(d.filename, (data_dir / d.stored_path).read_bytes(), "pdf", max_pdf_pages=2000)
        pdf_time += time.perf_counter() - t
    print(f"ingest corpus: {len(documents)} documents, {chunks} chunks, {chars / 1e6:.2f} M chars "
          f"in {elapsed:.1f} s = {chunks / elapsed:.1f} chunks/s, "
          f"{chars / 3000 / elapsed:.2f} page-equivalents/s (3,000 chars a page)")
    print(f"ingest PDFs only (parse+chunk+embed, no store): {pdf_pages} pages in {pdf_time:.1f} s "
          f"= {pdf_pages / pdf_time:.2f} pages/s")

    # 2. Grow to N chunks with perturbed copies of the corpus chunks.
    rng = np.random.default_rng(0)
    base = list(Chunk.objects.select_related("document").order_by("pk"))
    got = store.collection(store.CHUNKS).get(ids=[str(c.pk) for c in base], include=["embeddings"])
    base_vectors = dict(zip((int(i) for i in got["ids"]), np.asarray(got["embeddings"], dtype=np.float32)))
    needed = args.chunks - len(base)
    copies = [(base[i % len(base)], base[int(rng.integers(0, len(base)))]) for i in range(needed)]
    texts = [_perturb(c.text, rng, donor.text) for c, donor in copies]
    # Embedding all of them on 2 cores takes ~45 min, so a sample is embedded for real to
    # measure throughput and how far a perturbed chunk's vector moves; the rest get the
    # original vector moved by noise of that size.
    sample = min(args.embed_sample, needed)
    t = time.perf_counter()
    real = embed([context_text(c.document.title, c.section, x) for (c, _), x in zip(copies[:sample], texts)])
    embed_s = time.perf_counter() - t
    cosines = np.einsum("ij,ij->i", real, np.stack([base_vectors[c.pk] for c, _ in copies[:sample]]))
    print(f"embedding throughput: {sample} chunks in {embed_s:.1f} s = {sample / embed_s:.1f} chunks/s "
          f"(so {args.chunks} chunks would take {args.chunks / (sample / embed_s) / 60:.0f} min); "
          f"perturbed-vs-original cosine mean {cosines.mean():.3f}")
    target = float(cosines.mean())
    sigma = np.sqrt((1 / target**2 - 1) / 384)  # E[cos] of v + N(0, sigma^2 I), |v| = 1
    synthetic = np.stack([base_vectors[c.pk] for c, _ in copies[sample:]])
    synthetic = synthetic + rng.normal(0, sigma, synthetic.shape).astype(np.float32)
    synthetic /= np.linalg.norm(synthetic, axis=1, keepdims=True)
    vectors = np.concatenate([real, synthetic]) if needed > sample else real
    t = time.perf_counter()
    per_doc = 1000
    for start in range(0, needed, per_doc):
        part = copies[start : start + per_doc]
        source = part[0][0].document
        with transaction.atomic():
            document = Document.objects.create(
                title=f"Synthetic {start // per_doc}", filename=f"synthetic-{start}.md", kind="markdown",
                vendor=source.vendor, hardware=source.hardware, category=source.category,
                content_hash=f"synthetic-{start}", size_bytes=0, stored_path="", status="ready")
            rows = Chunk.objects.bulk_create([
                Chunk(document=document, ordinal=i, text=texts[start + i], section=c.section, page=c.page)
                for i, (c, _) in enumerate(part)])
            store.add(store.CHUNKS, [str(r.pk) for r in rows], vectors[start : start + len(rows)],
                      [{"document_id": document.pk, "document": document.title, "vendor": document.vendor,
                        "hardware": document.hardware, "category": document.category,
                        "page": r.page, "section": r.section} for r in rows],
                      [r.text for r in rows])
    print(f"stored {needed} synthetic chunks (DB + Chroma HNSW) in {time.perf_counter() - t:.1f} s; "
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
    s.add_argument("--embed-sample", type=int, default=1000)
    lat = sub.add_parser("latency")
    lat.add_argument("data_dir", type=Path, help="the data dir a `scale` run printed")
    lat.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    lat.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    if args.mode == "variants":
        run_variants(args.corpus, args.only)
    elif args.mode == "latency":
        run_latency(args)
    else:
        run_scale(args)


if __name__ == "__main__":
    main()
