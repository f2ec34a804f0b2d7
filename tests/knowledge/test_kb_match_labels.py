"""The search page's match labels on the labelled corpus, through the real pipeline (model,
Chroma, BM25): a passage that answers is a "strong match", and no question the corpus cannot
answer gets one (issue 32 item 7; the thresholds' calibration is `kb_bench.py strength`)."""

from knowledge.evaluation import UNANSWERABLE, evidence_hit
from knowledge.retrieval import retrieve
from knowledge.selectors import KnowledgeScope
from knowledge.views import match_strength


def labels(question: str) -> list[tuple[str, str]]:
    return [(match_strength(r.similarity)["strength"], r.text)
            for r in retrieve(question, scope=KnowledgeScope.ALL, k=5)]


def test_answering_passages_are_strong_matches(corpus_kb, kb):
    weak = []
    for q in corpus_kb.questions:
        found = labels(q["question"])
        answering = [strength for strength, text in found if evidence_hit(q, [text])]
        if answering and "strong match" not in answering:
            weak.append((q["id"], answering))
    assert len(weak) <= len(corpus_kb.questions) // 10, weak


def test_questions_no_document_answers_get_no_strong_match(corpus_kb, kb):
    strong = [q for q in UNANSWERABLE if any(s == "strong match" for s, _ in labels(q))]
    assert strong == []
