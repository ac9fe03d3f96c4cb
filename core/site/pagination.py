"""The API's pages (a module of its own: DRF imports it from the settings, before the views exist)."""

from __future__ import annotations

import re

from rest_framework.exceptions import ParseError
from rest_framework.pagination import LimitOffsetPagination

MAX_OFFSET = 2**63 - 1  # PostgreSQL bigint: a larger OFFSET cannot be sent (it is past the last row anyway)
_WHOLE = re.compile(r"[0-9]+")


def _whole_number(request, name: str, low: int) -> int | None:
    """A query parameter as a whole number of at least ``low``, None when it is absent or empty; anything else
    (``false``, ``1.5``, ``-1``, ``1e3``) is a 400 saying so, not silently the default."""
    raw = request.query_params.get(name)
    if raw is None or not raw.strip():
        return None
    if not _WHOLE.fullmatch(raw.strip()) or int(raw) < low:
        raise ParseError(f'Query parameter "{name}" must be a whole number of {low} or more; got {raw[:40]!r}.')
    return int(raw)


class Pagination(LimitOffsetPagination):
    """Limit/offset pages of at most 1,000 rows: a larger ``limit`` is cut to that (a limit beyond the
    database's integer range would otherwise fail the query). A ``limit`` or ``offset`` that is not a whole number
    (``limit=false``, ``offset=1.5``) is refused with a 400 rather than read as the default."""

    max_limit = 1000

    def get_limit(self, request) -> int:
        limit = _whole_number(request, self.limit_query_param, 1)
        return self.default_limit if limit is None else min(limit, self.max_limit)

    def get_offset(self, request) -> int:
        offset = _whole_number(request, self.offset_query_param, 0)
        return min(offset or 0, MAX_OFFSET)  # past the last row anyway; a larger one would fail the query

    def get_schema_operation_parameters(self, view) -> list[dict]:
        """The schema says what is accepted: limit 1 or more (larger ones are cut to 1,000), offset 0 or more."""
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.limit_query_param:
                parameter["schema"]["minimum"] = 1
                parameter["description"] = "Rows per page: 1 or more, at most 1,000 (a larger limit is cut to that)."
            elif parameter["name"] == self.offset_query_param:
                parameter["schema"]["minimum"] = 0
        return parameters
