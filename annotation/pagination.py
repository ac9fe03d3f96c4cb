"""The API's pages (a module of its own: DRF imports it from the settings, before the views exist)."""

from rest_framework.pagination import LimitOffsetPagination


class Pagination(LimitOffsetPagination):
    """Limit/offset pages of at most 1,000 rows: a larger ``limit`` is cut to that (a limit beyond the
    database's integer range would otherwise fail the query)."""

    max_limit = 1000
