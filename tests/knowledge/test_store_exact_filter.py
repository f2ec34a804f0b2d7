"""A selective filter is answered exactly: every allowed vector is ranked, none is missed by the
graph (a team's few chunks in a large shared store once came back incomplete)."""

import numpy as np
import pytest

from knowledge import store

NAME = "test_exact_filter"
DIM = 384


class SpyCollection:
    """The real collection, counting the graph searches it is asked for."""

    def __init__(self, target):
        self.target = target
        self.graph_searches = 0

    def get(self, **kwargs):
        return self.target.get(**kwargs)

    def query(self, **kwargs):
        self.graph_searches += 1
        return self.target.query(**kwargs)


@pytest.fixture
def filled():
    """2000 distractors near the query and 7 allowed vectors far from it."""
    rng = np.random.default_rng(7)
    toward = rng.standard_normal(DIM)
    toward /= np.linalg.norm(toward)
    distractors = toward + 0.3 * rng.standard_normal((2000, DIM))
    allowed = -toward + 0.8 * rng.standard_normal((7, DIM))
    vectors = np.vstack([distractors, allowed]).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = [f"d{i}" for i in range(len(distractors))] + [f"a{i}" for i in range(len(allowed))]
    groups = ["distractor"] * len(distractors) + ["allowed"] * len(allowed)
    store.drop(NAME)
    store.add(NAME, ids, vectors, [{"group": g} for g in groups], [""] * len(ids))
    yield toward.astype(np.float32), dict(zip(ids, vectors))
    store.drop(NAME)


@pytest.fixture
def spy(monkeypatch):
    real = store.collection
    spies: dict[str, SpyCollection] = {}

    def spied(name, *, fresh=False):
        if name not in spies or fresh:
            spies[name] = SpyCollection(real(name, fresh=fresh))
        return spies[name]

    monkeypatch.setattr(store, "collection", spied)
    return spies


def brute_force(query, vectors, wanted):
    scored = {i: float(vectors[i] @ query / np.linalg.norm(query)) for i in wanted}
    return sorted(scored, key=lambda i: (-scored[i], i))


def test_a_selective_filter_ranks_every_allowed_vector_exactly(filled, spy):
    query, vectors = filled
    hits = store.query(NAME, query, 5, where={"group": "allowed"})
    allowed = [i for i in vectors if i.startswith("a")]
    assert [i for i, _ in hits] == brute_force(query, vectors, allowed)[:5]
    for id_, similarity in hits:
        assert similarity == pytest.approx(float(vectors[id_] @ query / np.linalg.norm(query)),
                                           abs=1e-5)
    assert len(store.query(NAME, query, 50, where={"group": "allowed"})) == len(allowed)
    assert spy[NAME].graph_searches == 0


def test_a_filter_matching_nothing_returns_nothing(filled, spy):
    query, _ = filled
    assert store.query(NAME, query, 5, where={"group": "nobody"}) == []
    assert spy[NAME].graph_searches == 0


def test_a_broad_filter_and_no_filter_use_the_graph(filled, spy, monkeypatch):
    query, vectors = filled
    monkeypatch.setattr(store, "EXACT_SEARCH_LIMIT", 100)
    hits = store.query(NAME, query, 10, where={"group": "distractor"})
    assert len(hits) == 10 and all(i.startswith("d") for i, _ in hits)
    assert spy[NAME].graph_searches == 1
    nearest = store.query(NAME, query, 10)
    assert spy[NAME].graph_searches == 2
    assert {i for i, _ in nearest} <= {i for i in vectors if i.startswith("d")}
