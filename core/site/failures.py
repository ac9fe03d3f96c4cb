"""Errors that are not the user's fault or not worth a traceback: a database outage (503 with Retry-After, one
warning line in the log) and values the database refuses (400). Shared by the API's exception handler and the
project's error views (config.failures)."""

from __future__ import annotations

import logging

from django.db import DataError, InterfaceError, OperationalError
from django.utils.translation import gettext_lazy as _

RETRY_AFTER_SECONDS = 5
OUTAGE_MESSAGE = _("The database is unavailable for a moment; please try again in a few seconds.")
DATA_MESSAGE = _("A value is too long or out of range for the database; shorten it and try again.")

log = logging.getLogger("minicex.failures")


def is_database_outage(exc: BaseException | None) -> bool:
    """True for errors of a database that cannot be reached or is restarting (connection refused or lost,
    "the database system is shutting down", SQLite "database is locked", deadlocks): retrying later helps."""
    return isinstance(exc, OperationalError | InterfaceError)


def is_refused_value(exc: BaseException | None) -> bool:
    """True when the database refused a value (too long for its column, out of range, NUL in text)."""
    return isinstance(exc, DataError)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else exc.__class__.__name__


def log_outage(request, exc: BaseException) -> None:
    """One warning line instead of a traceback: the outage is not a bug, and it may last for many requests."""
    log.warning("database unavailable, answered 503: %s %s (%s: %s)", getattr(request, "method", "?"),
                getattr(request, "path", "?"), exc.__class__.__name__, _first_line(exc))


def log_refused_value(request, exc: BaseException) -> None:
    log.warning("database refused a value, answered 400: %s %s (%s)", getattr(request, "method", "?"),
                getattr(request, "path", "?"), _first_line(exc))


def wants_json(request) -> bool:
    """API paths, and requests that send or ask for JSON (the rating page's saves), get JSON errors."""
    if request is None:
        return False
    if request.path.startswith("/api/"):
        return True
    accept = request.META.get("HTTP_ACCEPT", "")
    return request.content_type == "application/json" or (
        "application/json" in accept and "text/html" not in accept)
