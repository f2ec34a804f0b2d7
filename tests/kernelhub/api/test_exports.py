"""Streamed CSV/JSON exports: stable columns, UTF-8 BOM, streaming, query options."""

from __future__ import annotations

import csv
import io
import json

import pytest

from kernelhub.api.flat import ENTITY_SETS

pytestmark = pytest.mark.django_db


def streamed(response) -> str:
    assert response.streaming, "exports must stream"
    chunks = list(response.streaming_content)
    return b"".join(chunks).decode("utf-8")


@pytest.mark.parametrize("name", list(ENTITY_SETS))
def test_csv_has_bom_and_stable_column_order(key_client, api_keys, workspace, name):
    response = key_client(api_keys[("alpha", "read")]).get(f"/api/v1/exports/{name}.csv")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert f"kernelhub-{name}-" in response["Content-Disposition"]
    text = streamed(response)
    assert text.startswith("\ufeff")
    rows = list(csv.reader(io.StringIO(text[1:])))
    assert rows[0] == ENTITY_SETS[name].column_names()
    assert len(rows) > 1 and all(len(r) == len(rows[0]) for r in rows)


def test_json_export_matches_csv_and_odata(key_client, api_keys, workspace):
    client = key_client(api_keys[("alpha", "read")])
    data = json.loads(streamed(client.get("/api/v1/exports/candidates.json")))
    assert [list(r) for r in data] == [ENTITY_SETS["candidates"].column_names()] * len(data)
    odata = client.get("/odata/candidates").json()["value"]
    assert data == odata
    csv_rows = list(csv.DictReader(io.StringIO(streamed(
        client.get("/api/v1/exports/candidates.csv"))[1:])))
    assert [int(r["id"]) for r in csv_rows] == [r["id"] for r in data]
    assert csv_rows[1]["speedup_vs_eager"] == "2.0" and csv_rows[0]["speedup_vs_eager"] == ""


def test_exports_take_select_filter_orderby_and_refuse_bad_ones(key_client, api_keys, workspace):
    client = key_client(api_keys[("alpha", "read")])
    text = streamed(client.get("/api/v1/exports/candidates.csv", {
        "$select": "node_id,speedup_vs_eager", "$filter": "speedup_vs_eager gt 1",
        "$orderby": "speedup_vs_eager desc"}))
    assert text[1:].splitlines() == ["node_id,speedup_vs_eager", "3,5.0", "1,2.0"]
    response = client.get("/api/v1/exports/candidates.csv", {"$filter": "speedup_vs_eager >> 1"})
    assert response.status_code == 400 and "$filter" in response.json()["detail"]
    assert client.get("/api/v1/exports/candidates.csv", {"$top": "3"}).status_code == 400
    assert client.get("/api/v1/exports/teams.csv").status_code == 404


def test_non_ascii_names_survive_the_round_trip(key_client, api_keys, workspace):
    from kernelhub.optimization.models import Problem

    Problem.objects.filter(pk=workspace["alpha"]["session"].problem_id).update(name="softmax-ä-東京")
    text = streamed(key_client(api_keys[("alpha", "read")]).get("/api/v1/exports/sessions.csv"))
    assert "softmax-ä-東京" in text.encode("utf-8").decode("utf-8-sig")


def test_export_streams_in_chunks_without_building_the_table(workspace):
    """The generator yields header, then chunks of rows, reading rows lazily."""
    from kernelhub.api.exports import ROWS_PER_WRITE, csv_chunks
    from kernelhub.optimization.models import Candidate

    session = workspace["alpha"]["session"]
    Candidate.objects.bulk_create([Candidate(session=session, node_id=f"n{i}", status="correct")
                                   for i in range(ROWS_PER_WRITE * 2 + 3)])
    entity = ENTITY_SETS["candidates"]
    chunks = list(csv_chunks(entity, entity.queryset([session.team_id]), ["id", "node_id"]))
    assert chunks[0] == "\ufeffid,node_id\r\n"
    assert len(chunks) == 1 + 3  # two full chunks and the rest
    assert sum(c.count("\r\n") for c in chunks[1:]) == ROWS_PER_WRITE * 2 + 3 + 4
