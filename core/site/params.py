"""Whole-number parameters of pages (query strings and form fields): a bad value is a 400 with a message
(Django's BadRequest, shown by the project's 400 page), never a ValueError that ends as a 500."""

from __future__ import annotations

from django.core.exceptions import BadRequest

MAX_ID = 2**63 - 1  # PostgreSQL bigint


def whole_number(params, name: str, *, default: int | None = None, low: int = 0, high: int = MAX_ID) -> int | None:
    """``params[name]`` as an int in [low, high]; ``default`` when missing or blank."""
    raw = params.get(name)
    if raw is None or not str(raw).strip():
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise BadRequest(f'"{name}" must be a whole number; got {str(raw)[:40]!r}.') from None
    if not low <= value <= high:
        raise BadRequest(f'"{name}" must be between {low} and {high}; got {value}.')
    return value
