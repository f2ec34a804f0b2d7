"""The filters and sortable columns of the documents' list; kernelhub.listing does the
filtering, sorting and paging."""

from __future__ import annotations

import django_filters as df
from django.db.models import Q

from kernelhub.listing import ListSpec
from knowledge.models import Category, Document

DOCUMENT_KINDS = [(k, k) for k in ("pdf", "markdown", "rst", "html", "text")]


class DocumentListFilter(df.FilterSet):
    q = df.CharFilter(method="search", label="Title, file or vendor")
    status = df.ChoiceFilter(choices=Document.Status.choices, empty_label="any status")
    category = df.ChoiceFilter(choices=Category.choices, empty_label="any category")
    kind = df.ChoiceFilter(choices=DOCUMENT_KINDS, empty_label="any type", label="Type")
    hardware = df.CharFilter(method="tagged", label="Hardware tag")

    def search(self, queryset, name, value):
        value = value.strip()
        return queryset.filter(Q(title__icontains=value) | Q(filename__icontains=value)
                               | Q(vendor__icontains=value))

    def tagged(self, queryset, name, value):
        tag = value.strip().lower()
        # JSON "contains" is not on SQLite; the tags are lower-case words in a JSON list.
        return queryset.filter(hardware__icontains=f'"{tag}"') if tag else queryset


DOCUMENTS = ListSpec(DocumentListFilter, {
    "title": "title", "kind": "kind", "vendor": "vendor", "category": "category",
    "chunks": "chunk_count", "status": "status", "team": "team__name",
    "uploaded": "created_at"}, "-uploaded")
