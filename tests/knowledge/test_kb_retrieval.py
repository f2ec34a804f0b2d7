"""Hybrid retrieval: filters by hardware (plus vendor-neutral pages) and category, and
finds passages by exact identifiers as well as by meaning."""

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from knowledge.errors import KnowledgeInputError
from knowledge.fusion import reciprocal_rank_fusion
from knowledge.lexical import BM25Index, tokenize
from knowledge.retrieval import retrieve as scoped_retrieve
from knowledge.selectors import KnowledgeScope


def retrieve(*args, **kwargs):
    """The operator's view (every document): these tests are about ranking, not teams."""
    return scoped_retrieve(*args, scope=KnowledgeScope.ALL, **kwargs)

NVIDIA = b"# Hopper\n\nIssue wgmma instructions from a warpgroup of four warps; TMA copies tiles.\n"
AMD = b"# CDNA3\n\nOn gfx942 set qpu_waves_hint to raise occupancy; MFMA matrix cores do the math.\n"
GENERIC = (b"# Fusion\n\nKernel fusion merges a chain of elementwise operators into one launch, so "
           b"intermediate tensors never round-trip through global memory.\n")
RULES = b"# Accuracy\n\nTF32 reduces mantissa precision; compare results with a tolerance.\n"


@pytest.fixture
def small_kb(kb, ingest):
    return {
        "nvidia": ingest("hopper.md", NVIDIA, hardware="h100,h200", category="hardware-specific"),
        "amd": ingest("cdna3.md", AMD, hardware="mi300x", category="hardware-specific"),
        "generic": ingest("fusion.md", GENERIC, category="general-optimization"),
        "rules": ingest("tf32.md", RULES, hardware="h100", category="correctness-constraints"),
    }


MINE = {"hopper.md", "cdna3.md", "fusion.md", "tf32.md"}


def filenames(results):
    """Our documents among the results (the corpus may be indexed in the same run)."""
    return [r.filename for r in results if r.filename in MINE]


def test_exact_identifier_and_meaning(small_kb):
    top = retrieve("how do I set qpu_waves_hint", k=1)[0]
    assert top.filename == "cdna3.md"
    assert top.section == "CDNA3" and top.document == "CDNA3" and top.score > 0
    # Hardly a word in common with the fusion page: the vector ranking must find it.
    question = "combine several pointwise ops in a single kernel so temporaries skip DRAM"
    assert filenames(retrieve(question, k=100))[0] == "fusion.md"


def test_hardware_filter_keeps_generic_pages(small_kb):
    results = retrieve("warpgroup matrix occupancy launch memory", hardware="mi300x", k=50)
    assert all({"mi300x", "generic"} & set(r.hardware) for r in results)
    names = filenames(results)
    assert "cdna3.md" in names and "fusion.md" in names
    assert "hopper.md" not in names and "tf32.md" not in names


def test_category_filter(small_kb):
    results = retrieve("tensor precision tolerance", categories=["correctness-constraints"], k=50)
    assert filenames(results) == ["tf32.md"]
    assert {r.category for r in results} == {"correctness-constraints"}
    with pytest.raises(KnowledgeInputError, match="Unknown category fastest"):
        retrieve("x", categories=["fastest"])


def test_results_are_sorted_and_capped(small_kb):
    results = retrieve("matrix instructions", k=3)
    assert len(results) == 3
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
    assert retrieve("   ", k=3) == []


def test_bm25_matches_rank_bm25():
    texts = ["num_stages 2 for one GEMM", "two GEMMs fused: flash attention", "TMA multicast", ""]
    index = BM25Index(texts)
    reference = BM25Okapi([tokenize(t) or ["\x00"] for t in texts])
    query = "num_stages for fused GEMM attention"
    assert np.allclose(index.scores(query), reference.get_scores(tokenize(query)), atol=1e-5)


def test_reciprocal_rank_fusion_rewards_agreement():
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]])
    assert fused[0][0] == "b"
    assert {key for key, _ in fused} == {"a", "b", "c", "d"}
