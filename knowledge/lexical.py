"""BM25 over chunk texts: rank_bm25's Okapi scoring, precomputed into a sparse matrix.

rank_bm25 scores a query with a Python loop over every document, which at 50,000 chunks
is too slow for interactive search. Its per-term, per-document weights do not depend on
the query, so we compute them once (from rank_bm25's own idf, k1, b and document lengths)
and a query becomes a sum of a few sparse columns. Scores equal rank_bm25's get_scores.
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np
from rank_bm25 import BM25Okapi
from scipy import sparse

TOKEN = re.compile(r"[a-z0-9]+(?:[_.][a-z0-9]+)*")


@lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def tokenize(text: str) -> list[str]:
    """Lower-case identifiers and words; `num_stages` also yields `num` and `stages`."""
    stop = _stop_words()
    tokens: list[str] = []
    for token in TOKEN.findall(text.lower()):
        if token in stop:
            continue
        tokens.append(_stem(token))
        if "_" in token or "." in token:
            tokens.extend(_stem(p) for p in re.split(r"[_.]", token) if p and p not in stop)
    return tokens


def _stem(token: str) -> str:
    # Plural "s" only: "threadblocks" finds "threadblock"; identifiers stay intact.
    if len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


class BM25Index:
    def __init__(self, texts: list[str], k1: float = 1.5, b: float = 0.75) -> None:
        tokenized = [tokenize(t) or ["\x00"] for t in texts]  # rank_bm25 needs non-empty docs
        self.size = len(texts)
        bm25 = BM25Okapi(tokenized, k1=k1, b=b)
        self.vocabulary = {term: i for i, term in enumerate(bm25.idf)}
        rows, cols, tfs = [], [], []
        for row, freqs in enumerate(bm25.doc_freqs):
            rows.extend([row] * len(freqs))
            cols.extend(self.vocabulary[t] for t in freqs)
            tfs.extend(freqs.values())
        rows_a = np.asarray(rows, dtype=np.int32)
        tf = np.asarray(tfs, dtype=np.float32)
        idf = np.asarray([bm25.idf[t] for t in self.vocabulary], dtype=np.float32)
        doc_len = np.asarray(bm25.doc_len, dtype=np.float32)
        norm = k1 * (1 - b + b * doc_len / bm25.avgdl)
        weights = idf[np.asarray(cols, dtype=np.int32)] * tf * (k1 + 1) / (tf + norm[rows_a])
        self.matrix = sparse.csc_matrix(
            (weights, (rows_a, np.asarray(cols, dtype=np.int32))),
            shape=(self.size, len(self.vocabulary)), dtype=np.float32,
        )

    def scores(self, query: str) -> np.ndarray:
        ids = [self.vocabulary[t] for t in tokenize(query) if t in self.vocabulary]
        if not ids:
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self.matrix[:, ids].sum(axis=1)).ravel()

    def top(self, query: str, n: int, mask: np.ndarray | None = None) -> list[tuple[int, float]]:
        """(row, score) of the best `n` rows with a positive score, best first."""
        scores = self.scores(query)
        if mask is not None:
            scores = np.where(mask, scores, 0.0)
        n = min(n, int(np.count_nonzero(scores > 0)))
        if n == 0:
            return []
        rows = np.argpartition(-scores, n - 1)[:n]
        rows = rows[np.argsort(-scores[rows], kind="stable")]
        return [(int(r), float(scores[r])) for r in rows]
