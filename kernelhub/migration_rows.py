"""A data migration's loop over many rows: rewrite each in Python, save them in batches.
Kept generic (no model, no field names) so the migrations that use it stay frozen."""

from __future__ import annotations

from typing import Callable

BATCH = 500


def rewrite_rows(queryset, fields: list[str], rewrite: Callable[[object], bool]) -> int:
    """Call `rewrite(row)` (True: it changed the row) on every row of `queryset` and save
    the changed rows' `fields`, `BATCH` rows at a time (read by primary key, so no cursor
    stays open on the table being written). Returns how many rows changed."""
    pks = list(queryset.order_by("pk").values_list("pk", flat=True))
    count = 0
    for start in range(0, len(pks), BATCH):
        changed = [row for row in queryset.filter(pk__in=pks[start:start + BATCH])
                   if rewrite(row)]
        queryset.bulk_update(changed, fields)
        count += len(changed)
    return count
