from rest_framework.pagination import CursorPagination


class IdCursorPagination(CursorPagination):
    """Cursor pagination (stable under inserts, constant cost per page) on the id."""

    ordering = "-id"
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500


class NameCursorPagination(IdCursorPagination):
    ordering = "name"
