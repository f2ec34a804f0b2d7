"""Trajectory export: JSON Lines, one record per root-to-leaf chain, with TRLOO credit."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.django_db


def records(client, session_id, query="") -> list[dict]:
    response = client.get(f"/api/v1/sessions/{session_id}/trajectories{query}",
                          HTTP_ACCEPT="application/x-ndjson")
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"] == "application/x-ndjson"
    lines = b"".join(response.streaming_content).decode().splitlines()
    return [json.loads(line) for line in lines]


def test_one_record_per_chain_with_rewards_returns_and_trloo(key_client, api_keys, workspace,
                                                             relu2_kernel):
    session = workspace["alpha"]["session"]
    chains = {tuple(r["chain"]): r for r in records(key_client(api_keys[("alpha", "read")]),
                                                    session.pk)}
    assert set(chains) == {("0", "2"), ("0", "1", "3")}
    deep = chains[("0", "1", "3")]
    assert deep["problem"] == "tiny-relu" and deep["hardware"] == "interpreter"
    assert deep["gamma"] == 0.5
    first, second = deep["turns"]
    # G3 = 1.5; G1 = 2.0 + 0.5 * 1.5; G2 = 0 (lazy). Groups: {1, 2} and {3}.
    assert (first["node_id"], first["turn"], first["reward"]) == ("1", 1, 2.0)
    assert first["return"] == pytest.approx(2.75) and first["advantage"] == pytest.approx(2.75)
    assert first["group_size"] == 2 and first["dropped_by_profiling"] is False
    assert first["transformation"] == {"name": "fuse", "params": {"BLOCK": 1024}}
    assert first["response"] is None and first["source"] == relu2_kernel
    assert first["result"]["status"] == "correct" and first["result"]["bottleneck"] == "memory-bound"
    assert second["advantage"] == pytest.approx(1.5) and second["group_size"] == 1
    assert second["parent_node_id"] == "1" and second["result"]["integrity_flags"]
    assert deep["chain_return"] == pytest.approx(2.0 + 0.5 * 1.5)
    (lazy,) = chains[("0", "2")]["turns"]
    assert lazy["dropped_by_profiling"] is True and lazy["advantage"] == pytest.approx(-2.75)
    assert lazy["prompt"] == "p" and lazy["response"] == relu2_kernel
    assert lazy["transformation"] is None


def test_trloo_matches_the_search_engine_credit(key_client, api_keys, workspace):
    from search_engine.search.credit import trloo

    session = workspace["alpha"]["session"]
    turns = {t["node_id"]: t for r in records(key_client(api_keys[("alpha", "read")]), session.pk)
             for t in r["turns"]}
    group = [turns["1"]["return"], turns["2"]["return"]]
    assert [turns["1"]["advantage"], turns["2"]["advantage"]] == pytest.approx(trloo(group))


def test_gamma_zero_scores_each_turn_alone_and_bad_gamma_is_refused(key_client, api_keys,
                                                                    workspace):
    client = key_client(api_keys[("alpha", "read")])
    session = workspace["alpha"]["session"]
    turns = {t["node_id"]: t for r in records(client, session.pk, "?gamma=0") for t in r["turns"]}
    assert turns["1"]["return"] == 2.0 and turns["1"]["advantage"] == 2.0
    response = client.get(f"/api/v1/sessions/{session.pk}/trajectories?gamma=2")
    assert response.status_code == 400 and "gamma" in response.json()


def test_a_session_with_only_its_root_has_no_records(key_client, api_keys, workspace):
    from kernelhub.optimization.models import Candidate

    session = workspace["alpha"]["session"]
    Candidate.objects.filter(session=session).exclude(node_id="0").delete()
    assert records(key_client(api_keys[("alpha", "read")]), session.pk) == []
