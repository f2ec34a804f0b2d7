"""CSV exports neutralise spreadsheet formulas in text cells; numbers stay numbers."""

from __future__ import annotations

import csv
import io

import pytest

from kernelhub.api.exports import csv_cell

pytestmark = pytest.mark.django_db

DANGEROUS = ["=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2+3", "@SUM(A1)", "\tx", "\rx",
             "=cmd|' /C calc'!A0"]


@pytest.mark.parametrize("text", DANGEROUS)
def test_formula_like_text_gets_a_leading_quote(text):
    assert csv_cell(text) == "'" + text


@pytest.mark.parametrize("value", [-1.5, -3, 0, 2.25, "plain", "a=b", "", "'quoted"])
def test_numbers_and_harmless_text_are_untouched(value):
    assert csv_cell(value) == value
    assert csv_cell(None) == ""


def export_rows(client, entity="kernels"):
    body = b"".join(client.get(f"/api/v1/exports/{entity}.csv").streaming_content)
    return list(csv.DictReader(io.StringIO(body.decode("utf-8-sig"))))


def test_export_quotes_formulas_but_keeps_negative_numbers(key_client, api_keys, workspace):
    review = workspace["alpha"]["approved"]
    review.comment = "=HYPERLINK(\"http://evil\",\"click\")"
    review.save(update_fields=["comment"])
    candidate = review.candidate
    candidate.speedup_vs_eager = -0.5  # a (strange) negative number stays a number
    candidate.reward = -2.0
    candidate.save(update_fields=["speedup_vs_eager", "reward"])
    session = candidate.session
    session.problem.family = "-leading-dash"
    session.problem.save(update_fields=["family"])
    (row,) = export_rows(key_client(api_keys[("alpha", "read")]))
    assert row["comment"] == "'=HYPERLINK(\"http://evil\",\"click\")"
    assert row["family"] == "'-leading-dash"
    assert row["speedup_vs_eager"] == "-0.5" and row["reward"] == "-2.0"
    assert not row["proposed_at"].startswith("'")


def test_json_export_is_not_altered(key_client, api_keys, workspace):
    import json

    review = workspace["alpha"]["approved"]
    review.comment = "=1+1"
    review.save(update_fields=["comment"])
    client = key_client(api_keys[("alpha", "read")])
    body = b"".join(client.get("/api/v1/exports/kernels.json").streaming_content)
    assert json.loads(body)[0]["comment"] == "=1+1"
