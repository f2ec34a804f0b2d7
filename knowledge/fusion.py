"""Reciprocal-rank fusion (Cormack et al., 2009): score = sum of weight / (k + rank).

Ranks, not raw scores, are fused, so BM25's unbounded scores and cosine similarities
need no calibration against each other.
"""

from __future__ import annotations

from typing import Hashable, Sequence

RRF_K = 60


def reciprocal_rank_fusion(rankings: Sequence[Sequence[Hashable]], k: int = RRF_K,
                           weights: Sequence[float] | None = None) -> list[tuple[Hashable, float]]:
    weights = weights or [1.0] * len(rankings)
    scores: dict[Hashable, float] = {}
    for ranking, weight in zip(rankings, weights):
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda item: item[1], reverse=True)
