"""Issue 17: exports write empty (not 0.0) where nothing was timed, and fill `family` from
the offline coverage analysis where the problem was stored without one."""

from __future__ import annotations

import csv
import io

import pytest


pytestmark = pytest.mark.django_db


def streamed(response) -> str:
    return b"".join(response.streaming_content).decode("utf-8")


def test_untimed_compile_is_empty_and_family_is_filled(key_client, api_keys, workspace):
    good = workspace["alpha"]["candidates"][1]
    good.timing = {**good.timing, "compile": {"median_ms": None, "iqr_ms": None, "samples": 0}}
    good.save(update_fields=["timing"])
    problem = good.session.problem
    problem.family, problem.offline_coverage_family = "", "rows"
    problem.save(update_fields=["family", "offline_coverage_family"])
    client = key_client(api_keys[("alpha", "read")])
    for name in ("kernels", "candidates"):
        rows = list(csv.DictReader(io.StringIO(streamed(
            client.get(f"/api/v1/exports/{name}.csv"))[1:])))
        row = next(r for r in rows if r.get("eager_ms") == "1.0")
        assert row["compile_ms"] == "" and row["candidate_ms"] == "0.5"
        assert row["family"] == "rows"
    odata = client.get("/odata/kernels").json()["value"][0]
    assert odata["compile_ms"] is None and odata["family"] == "rows"
    kernel = workspace["alpha"]["approved"]
    module = client.get(f"/api/v1/kernels/{kernel.pk}/module").content.decode()
    assert "family: rows" in module and "compile n/a" in module
