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
  python benchmarks/kb_bench.py strength [--corpus ../shared/corpus]
      calibration of the search page's match labels (knowledge.views.match_strength): the
      best passage's cosine similarity for the labelled questions (and of their evidence
      passage) against questions no document answers (knowledge.evaluation.UNANSWERABLE), with the share of each
      labelled strong / related / weak at the current thresholds.
"""

# This module: the command line and the retrieval-quality modes (variants, diagnostics); the
# speed modes (pdf, scale, latency) are in kb_bench_speed.py, the shared setup in
# kb_bench_setup.py.

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
DEFAULT_CORPUS = REPO.parent / "shared" / "corpus"

from benchmarks.kb_bench_setup import backend_line, setup_django  # noqa: E402
from benchmarks.kb_bench_speed import run_latency, run_pdf, run_scale  # noqa: E402


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
    print(backend_line())
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


def _strength_counts(similarities: list[float]) -> str:
    from knowledge.views import RELATED_FROM, STRONG_FROM

    strong = sum(s >= STRONG_FROM for s in similarities)
    related = sum(RELATED_FROM <= s < STRONG_FROM for s in similarities)
    return f"strong {strong}, related {related}, weak {len(similarities) - strong - related}"


def run_strength(corpus: Path) -> None:
    import tempfile

    setup_django(Path(tempfile.mkdtemp(prefix="kb-bench-strength-")))  # the labels live in views
    from knowledge.chunking import chunk_blocks
    from knowledge.embeddings import embed_query, token_counts
    from knowledge.evaluation import UNANSWERABLE, corpus_files, evidence_hit, load_questions
    from knowledge.filetypes import detect_kind
    from knowledge.ingestion import CHUNKING
    from knowledge.parsing import parse_bytes
    from knowledge.retrieval_text import context_text
    from knowledge.views import RELATED_FROM, STRONG_FROM

    print(backend_line())
    chunks = []
    for f in corpus_files(corpus):
        data = f.path.read_bytes()
        doc = parse_bytes(f.relative, data, detect_kind(f.relative, data[:2048]))
        chunks += [(doc.title or f.relative, c) for c in chunk_blocks(doc.blocks, token_counts,
                                                                       CHUNKING)]
    vectors = _embed_cached([context_text(t, c.section, c.text) for t, c in chunks], {})
    raw = [c.text for _, c in chunks]

    def best(question: str) -> tuple[float, np.ndarray]:
        sims = vectors @ embed_query(question)
        return float(sims.max()), sims

    answered, evidence = [], []
    for q in load_questions(corpus / "questions.json"):
        top, sims = best(q["question"])
        answered.append(top)
        holding = [float(sims[i]) for i in range(len(raw)) if evidence_hit(q, [raw[i]])]
        evidence.append(max(holding) if holding else float("nan"))
    unanswered = [best(q)[0] for q in UNANSWERABLE]
    print(f"{len(chunks)} chunks; thresholds: strong >= {STRONG_FROM}, related >= {RELATED_FROM}")
    for name, values in (("answerable: best passage", answered),
                         ("answerable: evidence passage", evidence),
                         ("unanswerable: best passage", unanswered)):
        finite = sorted(v for v in values if v == v)
        print(f"{name:>30}: n={len(values)} min {finite[0]:.3f} median "
              f"{finite[len(finite) // 2]:.3f} max {finite[-1]:.3f}; {_strength_counts(finite)}")
        print(" " * 32 + "sorted: " + " ".join(f"{v:.2f}" for v in finite))


def run_diagnostics(args) -> None:
    """Keyed vs plain retrieval for the search nodes of knowledge.evaluation.NODE_CASES."""
    import tempfile

    setup_django(Path(tempfile.mkdtemp(prefix="kb-bench-diag-")))
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
    print(backend_line())
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
    st = sub.add_parser("strength")
    st.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    args = parser.parse_args()
    if args.mode == "variants":
        run_variants(args.corpus, args.only)
    elif args.mode == "pdf":
        run_pdf(args)
    elif args.mode == "diagnostics":
        run_diagnostics(args)
    elif args.mode == "latency":
        run_latency(args)
    elif args.mode == "strength":
        run_strength(args.corpus)
    else:
        run_scale(args)


if __name__ == "__main__":
    main()
