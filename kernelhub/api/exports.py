"""Streamed CSV and JSON exports of the flat sets (kernels, sessions, candidates, evaluations).

Rows come from the database in chunks through `.iterator()` and leave as they are
written: memory stays flat however large the table. Column order is `flat.py`'s. CSV
starts with a UTF-8 BOM so Excel reads non-ASCII names correctly, and text cells that a
spreadsheet would evaluate as formulas are neutralised (`csv_cell`).
"""

from __future__ import annotations

import csv
import json
from typing import Iterator

from django.http import StreamingHttpResponse
from django.utils import timezone

from kernelhub.api.flat import EntitySet

BOM = "\ufeff"
ROWS_PER_WRITE = 500
# A text cell starting with one of these is a formula to Excel, LibreOffice and Sheets
# (CSV injection, OWASP): such cells get a leading single quote, which makes them text.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value):
    """A CSV cell: None empty; text that a spreadsheet would run as a formula quoted with
    a leading `'`. Only strings: numbers (a negative speedup, say) stay numbers."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


class _Line:
    """A file-like sink for csv.writer that hands back what was written."""

    def write(self, value: str) -> str:
        return value


def csv_chunks(entity: EntitySet, queryset, names: list[str]) -> Iterator[str]:
    writer = csv.writer(_Line(), lineterminator="\r\n")
    yield BOM + writer.writerow([csv_cell(n) for n in names])
    buffer: list[str] = []
    for row in entity.rows(queryset, names):
        buffer.append(writer.writerow([csv_cell(v) for v in row]))
        if len(buffer) >= ROWS_PER_WRITE:
            yield "".join(buffer)
            buffer.clear()
    if buffer:
        yield "".join(buffer)


def json_chunks(entity: EntitySet, queryset, names: list[str]) -> Iterator[str]:
    yield "["
    first = True
    buffer: list[str] = []
    for row in entity.rows(queryset, names):
        buffer.append(("" if first else ",") + json.dumps(dict(zip(names, row)),
                                                          separators=(",", ":")))
        first = False
        if len(buffer) >= ROWS_PER_WRITE:
            yield "".join(buffer)
            buffer.clear()
    yield "".join(buffer) + "]"


def export_response(entity: EntitySet, queryset, names: list[str], fmt: str
                    ) -> StreamingHttpResponse:
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    if fmt == "csv":
        response = StreamingHttpResponse(csv_chunks(entity, queryset, names),
                                         content_type="text/csv; charset=utf-8")
    else:
        response = StreamingHttpResponse(json_chunks(entity, queryset, names),
                                         content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = (
        f'attachment; filename="kernelhub-{entity.name}-{stamp}.{fmt}"')
    return response
