"""The project's error answers: never a bare 500 or a traceback when the cause is known.

* ``handler500`` runs inside Django's exception handling (``sys.exc_info()`` is the error): a database outage
  becomes 503 with ``Retry-After`` and one warning line in the log, a value the database refused becomes 400,
  anything else stays a 500 (logged with its traceback as usual). API paths and JSON requests get JSON.
* ``handler403`` logs a refusal as one warning line (Django logs it with the whole traceback of the
  ``PermissionDenied``, which says nothing a line does not).
* ``RejectUnstorableText`` answers 400 to text no database can store: NUL characters in the path, query
  parameters, form fields or a JSON body (psycopg refuses them before they reach PostgreSQL), and unpaired
  surrogates (``"a\\ud800b"``) or NaN in a JSON body (``core.site.storable``), which would end as a
  UnicodeEncodeError (500) in whichever view saves them: label, comment, flag and preference saves, the API.

The pages are rendered without the request context: they must work while the database is down.
"""

from __future__ import annotations

import logging
import sys

from django.core.exceptions import BadRequest
from django.http import HttpResponse, JsonResponse
from django.template import loader
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views import defaults

from core.site import failures, jsonbody, storable


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
    response = error_response(request, 503, _("Try again in a moment"), str(failures.OUTAGE_MESSAGE),
                              retry_after=failures.RETRY_AFTER_SECONDS)
    response._has_been_logged = True  # the warning line above is the log entry, not a traceback
    return response


def handler500(request, *args, **kwargs):
    exc = sys.exc_info()[1]
    if failures.is_database_outage(exc):
        return outage_response(request, exc)
    if failures.is_refused_value(exc):
        failures.log_refused_value(request, exc)
        response = error_response(request, 400, _("Value refused"), str(failures.DATA_MESSAGE))
        response._has_been_logged = True
        return response
    return error_response(request, 500, _("Something went wrong"),
                          _("The server failed to answer this request; the error was logged. Nothing you saved "
                            "before was lost. Please try again, and tell the coordinator if it persists."))


def handler403(request, exception=None, *args, **kwargs):
    """Django's 403 page (with the project switch when the user holds the page's role in another of their projects:
    ``projects.access.RoleElsewhere``), logged as one line (who, what, why) instead of a traceback."""
    from django.shortcuts import render

    from projects.access import RoleElsewhere

    if isinstance(exception, RoleElsewhere) and not failures.wants_json(request):
        response = render(request, "403.html", {"exception": exception, "switch_to": exception.projects,
                                                "switch_next": exception.path}, status=403)
    else:
        response = defaults.permission_denied(request, exception)
    user = getattr(request, "user", None)
    who = f"user #{user.pk}" if getattr(user, "is_authenticated", False) else "anonymous"
    reason = str(exception or "").strip().splitlines()
    logging.getLogger("django.request").warning(
        "Forbidden (Permission denied): %s %s by %s%s", request.method, request.path.encode("unicode_escape")
        .decode("ascii"), who, f" ({reason[0][:200]})" if reason else "")
    response._has_been_logged = True
    return response


def handler400(request, exception=None, *args, **kwargs):
    """Our own refusals (BadRequest, e.g. a non-numeric parameter) say why; Django's security refusals
    (SuspiciousOperation) stay generic."""
    message = str(exception) if type(exception) is BadRequest and str(exception) else _("The request is malformed.")
    return error_response(request, 400, _("Bad request"), message)


NUL_MESSAGE = gettext_lazy("The request contains a NUL character (\\x00), which cannot be stored; remove it and try "
                           "again.")
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
API_PREFIX = "/api/"


def _has_nul(query_dict) -> bool:
    return any("\x00" in key or any("\x00" in value for value in values) for key, values in query_dict.lists())


def json_body_problem(request) -> str | None:
    """Why a JSON request body is refused, or None: the reader's rules (core.site.jsonbody: UTF-8, valid JSON, depth,
    finite and not over-long numbers), then text the database cannot store. The parsed body is kept for the view."""
    if not jsonbody.is_json(request) or not request.body:
        return None
    try:
        data = jsonbody.request_json(request)
    except jsonbody.BadJSON as exc:
        return str(exc)
    if not storable.might_be_unstorable(request.body.decode("utf-8")):
        return None
    problem = storable.json_problem(data)
    return _("The request cannot be saved: %(problem)s; remove it and try again.") % {"problem": problem} \
        if problem else None


class RejectUnstorableText:
    """400 for text the database cannot store: NUL in the path, query parameters and form fields; NUL, unpaired
    surrogates and NaN in JSON bodies. One check for every page, before any view parses; the API's views make the
    same checks after authentication (config.api_contract)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith(API_PREFIX):
            # The API checks the same after authentication and permissions (config.api_contract.RequestChecks).
            return self.get_response(request)
        has_nul = "\x00" in request.path or _has_nul(request.GET)
        if not has_nul and request.method == "POST" and request.content_type in FORM_TYPES:
            has_nul = _has_nul(request.POST)
        if has_nul:
            return error_response(request, 400, _("Bad request"), str(NUL_MESSAGE))
        if request.method in ("POST", "PUT", "PATCH"):
            problem = json_body_problem(request)
            if problem:
                return error_response(request, 400, _("Bad request"), problem)
        return self.get_response(request)

    def process_exception(self, request, exc):
        """A database outage inside a view is a 503 also when DEBUG shows tracebacks for everything else."""
        if failures.is_database_outage(exc):
            return outage_response(request, exc)
        return None


def handler404(request, exception=None, *args, **kwargs):
    """The app's own "not found": JSON for the API; a page in the site's layout otherwise, which offers the switch
    when the object belongs to another project the user is a member of (``projects.access.InAnotherProject``)."""
    from django.shortcuts import render

    from projects.access import InAnotherProject

    if failures.wants_json(request):
        response = JsonResponse({"detail": "Not found."}, status=404)
    else:
        context = {}
        if isinstance(exception, InAnotherProject):
            context = {"switch_to": exception.project, "switch_next": exception.path}
        response = render(request, "404.html", context, status=404)
    response._minicex_page = True
    return response


class AppNotFound:
    """The app's own 404 page also in the embedded mode (DEBUG on), where Django would show its debug page listing
    every URL pattern: a view's Http404 goes to :func:`handler404` (with its project-switch offer), and an unknown
    address's debug page is replaced by it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        from django.conf import settings

        response = self.get_response(request)
        if (settings.DEBUG and response.status_code == 404 and not getattr(response, "_minicex_page", False)
                and not getattr(response, "streaming", False)
                and response.get("Content-Type", "").startswith("text/html")):
            response = handler404(request)
        return response

    def process_exception(self, request, exc):
        from django.conf import settings
        from django.http import Http404

        if isinstance(exc, Http404) and (settings.DEBUG or type(exc).__name__ == "InAnotherProject"):
            return handler404(request, exc)
        return None
