"""Reading OData system query options into a queryset (shared by the feed and the exports)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from kernelhub.api.flat import ALIAS_PREFIX, EntitySet
from kernelhub.api.odata.filter import (
    ODataQueryError, parse_filter_columns, parse_nonnegative_int, parse_orderby, parse_select,
)

SUPPORTED = {"$select", "$filter", "$orderby", "$top", "$skip", "$count", "$skiptoken", "$format"}
EXPORT_SUPPORTED = {"$select", "$filter", "$orderby"}


@dataclass
class QueryOptions:
    select: list[str]
    queryset: QuerySet        # filtered and ordered, not paged; annotates what it needs
    keys_queryset: QuerySet   # the same rows and order, annotating only filter/order columns
    ordered_by_key: bool      # no $orderby: pages can use keyset paging on the key
    top: int | None
    skip: int
    count: bool
    skiptoken: str | None


def read_options(params, entity: EntitySet, team_ids: list[int],
                 supported: set[str] = SUPPORTED) -> QueryOptions:
    for name in params:
        if name.startswith("$") and name not in supported:
            raise ODataQueryError(f"{name} is not supported here; supported: "
                                  f"{', '.join(sorted(supported))}.")
    fmt = params.get("$format")
    if fmt is not None and fmt.split(";")[0] not in ("json", "application/json"):
        raise ODataQueryError("$format: only json is served.")
    count_text = params.get("$count")
    if count_text not in (None, "true", "false"):
        raise ODataQueryError(f"$count must be true or false, got {count_text!r}.")
    select = parse_select(params.get("$select"), entity)
    filter_text = params.get("$filter")
    q, filter_names = (parse_filter_columns(filter_text, entity) if filter_text is not None
                       else (None, set()))
    orderby = params.get("$orderby")
    order = parse_orderby(orderby, entity)
    order_names = {entity_name(entity, alias.lstrip("-")) for alias in order}

    def build(names: set[str]) -> QuerySet:
        queryset = entity.queryset(team_ids, names)
        if q is not None:
            queryset = queryset.filter(q)
        return queryset.order_by(*order)

    return QueryOptions(
        select=select,
        queryset=build(set(select) | filter_names | order_names | {entity.key}),
        keys_queryset=build(filter_names | order_names | {entity.key}),
        ordered_by_key=not (orderby and orderby.strip()),
        top=parse_nonnegative_int("$top", params.get("$top")),
        skip=parse_nonnegative_int("$skip", params.get("$skip")) or 0,
        count=count_text == "true",
        skiptoken=params.get("$skiptoken"),
    )


def entity_name(entity: EntitySet, alias: str) -> str:
    return alias.removeprefix(ALIAS_PREFIX)
