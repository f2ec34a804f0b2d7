"""OData v4 views: service document, `$metadata`, entity sets with server-driven paging.

Paging: without `$orderby` pages continue after the last key seen (keyset: constant cost
per page however deep); with `$orderby` they continue at an offset. Either way the
`$skiptoken` also carries how many rows were served, so `$top` spans pages.
"""

from __future__ import annotations

import json
import logging
import re
from urllib.parse import urlencode

from django.conf import settings
from django.db import DataError
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import APIException
from rest_framework.views import APIView

from kernelhub.api.base import ApiViewMixin, IgnoreAcceptHeader
from kernelhub.api.flat import ENTITY_SETS, EntitySet
from kernelhub.api.odata.filter import ODataQueryError
from kernelhub.api.odata.metadata import metadata_xml
from kernelhub.api.odata.options import QueryOptions, read_options
from kernelhub.api.scoping import visible_team_ids

logger = logging.getLogger(__name__)
JSON_TYPE = "application/json;odata.metadata=minimal;odata.streaming=true;charset=utf-8"
DEFAULT_PAGE_SIZE = 2000
MAX_PAGE_SIZE = 10000
_SKIPTOKEN_RE = re.compile(r"^(?:k(?P<last>-?\d{1,18})|o)\.(?P<served>\d{1,12})$")


def odata_response(body: bytes | str, content_type: str = JSON_TYPE, status: int = 200):
    response = HttpResponse(body, content_type=content_type, status=status)
    response["OData-Version"] = "4.0"
    return response


def odata_error(message: str, status: int = 400, code: str = "BadRequest"):
    return odata_response(json.dumps({"error": {"code": code, "message": message}}),
                          content_type="application/json;charset=utf-8", status=status)


def page_size(request) -> int:
    size = getattr(settings, "KERNELHUB_ODATA_PAGE_SIZE", DEFAULT_PAGE_SIZE)
    prefer = request.headers.get("Prefer", "")
    match = re.search(r"odata\.maxpagesize=(\d{1,9})\b", prefer)
    if match:
        size = min(int(match.group(1)), size)
    return max(1, min(size, MAX_PAGE_SIZE))


class ODataView(ApiViewMixin, APIView):
    throttle_scope = "exports"
    # OData clients send Accept headers like application/xml or odata-specific JSON types.
    content_negotiation_class = IgnoreAcceptHeader

    def service_root(self, request) -> str:
        return request.build_absolute_uri("/odata/")

    def handle_exception(self, exc):
        """A refused query option is a 400; anything unexpected an OData-style 500 (logged),
        never an HTML page: Power BI shows the message of a JSON error only."""
        if isinstance(exc, ODataQueryError):
            return odata_error(str(exc))
        if isinstance(exc, (OverflowError, DataError)):
            # A value the database cannot hold (e.g. a number past 64 bits): the client's.
            logger.info("OData query value out of range: %s", exc)
            return odata_error("A value in the query is out of range for the database.")
        if isinstance(exc, (APIException, Http404, DjangoPermissionDenied)) or \
                not isinstance(exc, Exception):
            return super().handle_exception(exc)
        logger.exception("OData request failed: %s", self.request.get_full_path()[:500])
        return odata_error("Internal server error; it has been logged.", status=500,
                           code="InternalServerError")


@extend_schema(exclude=True)
class ServiceDocumentView(ODataView):
    def get(self, request):
        root = self.service_root(request)
        body = {
            "@odata.context": root + "$metadata",
            "value": [{"name": e.name, "kind": "EntitySet", "url": e.name}
                      for e in ENTITY_SETS.values()],
        }
        return odata_response(json.dumps(body))


@extend_schema(exclude=True)
class MetadataView(ODataView):
    def get(self, request):
        return odata_response(metadata_xml(), content_type="application/xml;charset=utf-8")


@extend_schema(exclude=True)
class EntitySetView(ODataView):
    def get(self, request, entity_set: str, count_segment: bool = False):
        entity = ENTITY_SETS.get(entity_set)
        if entity is None:
            return odata_error(f"No entity set {entity_set!r}; known: {', '.join(ENTITY_SETS)}.",
                               status=404, code="NotFound")
        try:
            options = read_options(request.query_params, entity, visible_team_ids(request))
            if count_segment:
                return HttpResponse(str(options.keys_queryset.count()),
                                    content_type="text/plain;charset=utf-8")
            body = self.page(request, entity, options)
        except ODataQueryError as exc:
            return odata_error(str(exc))
        return odata_response(json.dumps(body, separators=(",", ":")))

    def page(self, request, entity: EntitySet, options: QueryOptions) -> dict:
        served, last_key = 0, None
        if options.skiptoken is not None:
            match = _SKIPTOKEN_RE.match(options.skiptoken)
            if match is None or (match.group("last") is None) != (not options.ordered_by_key):
                raise ODataQueryError("$skiptoken is not one this service issued for this query.")
            served = int(match.group("served"))
            last_key = int(match.group("last")) if match.group("last") is not None else None
        queryset = options.queryset
        if last_key is not None:
            queryset = queryset.filter(**{entity.by_name[entity.key].alias + "__gt": last_key})
            offset = 0
        else:
            offset = options.skip + (served if not options.ordered_by_key else 0)
        remaining = options.top - served if options.top is not None else None
        limit = page_size(request) if remaining is None else min(page_size(request), remaining)
        names = options.select
        fetch = names if entity.key in names else [*names, entity.key]
        if limit <= 0:
            rows = []
        elif options.ordered_by_key:
            rows = list(entity.rows(queryset[offset:offset + limit + 1], fetch))
        else:
            rows = self.rows_by_offset(entity, options, fetch, offset, limit + 1)
        more = len(rows) > limit
        rows = rows[:limit]
        context = self.service_root(request) + "$metadata#" + entity.name
        if names != entity.column_names():
            context += "(" + ",".join(names) + ")"
        body: dict = {"@odata.context": context}
        if options.count:
            body["@odata.count"] = options.keys_queryset.count()
        body["value"] = [dict(zip(names, row)) for row in rows]
        if more and rows and (options.top is None or served + len(rows) < options.top):
            served += len(rows)
            key_index = fetch.index(entity.key)
            token = (f"k{rows[-1][key_index]}.{served}" if options.ordered_by_key
                     else f"o.{served}")
            body["@odata.nextLink"] = self.next_link(request, token)
        return body

    @staticmethod
    def rows_by_offset(entity: EntitySet, options: QueryOptions, fetch: list[str], offset: int,
                       count: int):
        """A page in `$orderby` order, in two steps: the page's keys (the sort touches only
        the ordering columns), then the full rows of just those keys. Deep pages stay cheap
        because the skipped rows' other columns are never computed."""
        key_alias = entity.by_name[entity.key].alias
        keys = list(options.keys_queryset.values_list(key_alias, flat=True)
                    [offset:offset + count])
        if not keys:
            return []
        key_index = fetch.index(entity.key)
        page = options.queryset.order_by().filter(**{key_alias + "__in": keys})
        by_key = {row[key_index]: row for row in entity.rows(page, fetch)}
        return [by_key[k] for k in keys if k in by_key]

    @staticmethod
    def next_link(request, token: str) -> str:
        params = [(k, v) for k, values in request.query_params.lists() for v in values
                  if k != "$skiptoken"]
        params.append(("$skiptoken", token))
        return request.build_absolute_uri(request.path) + "?" + urlencode(params, safe="$,'()")
