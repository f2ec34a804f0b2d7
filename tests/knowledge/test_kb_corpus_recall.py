"""Recall@5 on the labelled corpus through the real pipeline (model, Chroma, BM25)."""

from knowledge.evaluation import recall_at_k
from knowledge.retrieval import retrieve as scoped_retrieve
from knowledge.selectors import KnowledgeScope


def retrieve(*args, **kwargs):
    """The operator's view (every document): these tests are about ranking, not teams."""
    return scoped_retrieve(*args, scope=KnowledgeScope.ALL, **kwargs)


def test_corpus_recall_at_5(corpus_kb, kb):
    assert len(corpus_kb.documents) == len(corpus_kb.files) >= 20
    recall, missed = recall_at_k(corpus_kb.questions,
                                 lambda q: [c.text for c in retrieve(q, k=5)])
    print(f"recall@5 = {recall:.3f} on {len(corpus_kb.questions)} questions; missed: {missed}")
    assert recall >= 0.9, f"recall@5 {recall:.3f}; missed {missed}"


def test_corpus_hardware_filter_still_finds_the_passage(corpus_kb, kb):
    question = next(q for q in corpus_kb.questions if q["id"] == "kb-pub-17")  # MI300X num_stages
    texts = [c.text for c in retrieve(question["question"], hardware="mi300x", k=5)]
    assert recall_at_k([question], lambda q: texts)[0] == 1.0
    hits = retrieve(question["question"], hardware="h100", k=5)
    assert all("mi300x" not in r.hardware or "generic" in r.hardware for r in hits)
