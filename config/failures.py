"""The project's error answers: never a bare 500 or a traceback when the cause is known.

* ``handler500`` runs inside Django's exception handling (``sys.exc_info()`` is the error): a database outage
  becomes 503 with ``Retry-After`` and one warning line in the log, a value the database refused becomes 400,
  anything else stays a 500 (logged with its traceback as usual). API paths and JSON requests get JSON.
* ``RejectNulCharacters`` answers 400 to query parameters or form fields containing NUL, which PostgreSQL
  cannot store or compare (psycopg refuses such strings before they reach the server).

The pages are rendered without the request context: they must work while the database is down.
"""

from __future__ import annotations

import sys

from django.core.exceptions import BadRequest
from django.http import HttpResponse, JsonResponse
from django.template import loader

from annotation import failures


def error_response(request, status: int, title: str, message: str, *, retry_after: int | None = None):
    """JSON ``{"detail": ...}`` for the API and JSON requests, else a small page that needs no database."""
    if failures.wants_json(request):
        response = JsonResponse({"detail": message}, status=status)
    else:
        html = loader.get_template("error.html").render({"title": title, "message": message, "status": status})
        response = HttpResponse(html, status=status)
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return response


def outage_response(request, exc: BaseException):
    failures.log_outage(request, exc)
    response = error_response(request, 503, "Try again in a moment", failures.OUTAGE_MESSAGE,
                              retry_after=failures.RETRY_AFTER_SECONDS)
    response._has_been_logged = True  # the warning line above is the log entry, not a traceback
    return response


def handler500(request, *args, **kwargs):
    exc = sys.exc_info()[1]
    if failures.is_database_outage(exc):
        return outage_response(request, exc)
    if failures.is_refused_value(exc):
        failures.log_refused_value(request, exc)
        response = error_response(request, 400, "Value refused", failures.DATA_MESSAGE)
        response._has_been_logged = True
        return response
    return error_response(request, 500, "Something went wrong",
                          "The server failed to answer this request; the error was logged. Nothing you saved "
                          "before was lost. Please try again, and tell the coordinator if it persists.")


def handler400(request, exception=None, *args, **kwargs):
    """Our own refusals (BadRequest, e.g. a non-numeric parameter) say why; Django's security refusals
    (SuspiciousOperation) stay generic."""
    message = str(exception) if type(exception) is BadRequest and str(exception) else "The request is malformed."
    return error_response(request, 400, "Bad request", message)


NUL_MESSAGE = "The request contains a NUL character (\\x00), which cannot be stored; remove it and try again."
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def _has_nul(query_dict) -> bool:
    return any("\x00" in key or any("\x00" in value for value in values) for key, values in query_dict.lists())


class RejectNulCharacters:
    """400 for NUL characters in query parameters or form fields (JSON bodies are checked by the API's
    serializers and the rating endpoints)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        has_nul = "\x00" in request.path or _has_nul(request.GET)
        if not has_nul and request.method == "POST" and request.content_type in FORM_TYPES:
            has_nul = _has_nul(request.POST)
        if has_nul:
            return error_response(request, 400, "Bad request", NUL_MESSAGE)
        return self.get_response(request)

    def process_exception(self, request, exc):
        """A database outage inside a view is a 503 also when DEBUG shows tracebacks for everything else."""
        if failures.is_database_outage(exc):
            return outage_response(request, exc)
        return None
