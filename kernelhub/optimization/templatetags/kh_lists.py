"""Sortable column headers and page links that keep the list's filters in the URL."""

from __future__ import annotations

from django import template
from django.utils.html import format_html

register = template.Library()


def _query_with(request, **changes) -> str:
    query = request.GET.copy()
    for key, value in changes.items():
        if value is None:
            query.pop(key, None)
        else:
            query[key] = value
    return query.urlencode()


@register.simple_tag(takes_context=True)
def sort_header(context, key: str, label: str, target: str):
    """A header link: sorts by `key`, descending first, toggling on a second click."""
    request, current = context["request"], context.get("sort", "")
    if current == f"-{key}":
        next_sort, arrow, state = key, " ▼", "descending"
    elif current == key:
        next_sort, arrow, state = f"-{key}", " ▲", "ascending"
    else:
        next_sort, arrow, state = f"-{key}", "", "none"
    href = "?" + _query_with(request, sort=next_sort, page=None)
    return format_html(
        '<a class="sort" href="{}" hx-get="{}" hx-target="{}" hx-push-url="true" '
        'hx-sync="{}:replace" data-sort="{}" aria-sort="{}">{}{}</a>', href, href, target, target,
        key, state, label, arrow)


@register.simple_tag(takes_context=True)
def page_href(context, number: int) -> str:
    return "?" + _query_with(context["request"], page=number)
