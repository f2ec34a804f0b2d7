"""Server-side lists that scale: filtered (django-filter), sorted by a whitelisted column,
paginated; an htmx request gets only the list's partial, so filtering, sorting and paging
swap the table in place and push the URL (a reload or a shared link shows the same)."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.core.paginator import Paginator
from django.db.models import F, QuerySet
from django.shortcuts import render

DEFAULT_PER_PAGE = 25


@dataclass(frozen=True)
class ListSpec:
    filterset: type
    sorts: dict[str, str]  # what the URL says -> the ordering field (never raw user input)
    default_sort: str
    per_page: int = DEFAULT_PER_PAGE
    nulls_last: set[str] = field(default_factory=set)


def list_context(request, queryset: QuerySet, spec: ListSpec, **filter_kwargs) -> dict:
    """{"page_obj", "filter_form", "sort", "query", "total"} of one page of the list."""
    filterset = spec.filterset(request.GET, queryset=queryset, request=request,
                               **filter_kwargs)
    filterset.form.auto_id = "filter_%s"  # never the ids of a form beside it on the page
    rows = filterset.qs if filterset.is_valid() else queryset.none()
    sort = request.GET.get("sort") or spec.default_sort
    if sort.lstrip("-") not in spec.sorts:
        sort = spec.default_sort
    expression = F(spec.sorts[sort.lstrip("-")])
    ordered = expression.desc(nulls_last=True) if sort.startswith("-") else \
        expression.asc(nulls_last=True)
    paginator = Paginator(rows.order_by(ordered, "-pk"), spec.per_page)
    query = request.GET.copy()
    query.pop("page", None)
    return {"page_obj": paginator.get_page(request.GET.get("page")),
            "filter_form": filterset.form, "filter_errors": filterset.errors, "sort": sort,
            "query": query.urlencode(), "total": paginator.count}


def render_list(request, page_template: str, partial_template: str, context: dict):
    """The whole page, or only the list's partial for htmx (filter, sort, page)."""
    return render(request, partial_template if request.htmx else page_template, context)
