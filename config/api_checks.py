"""The API's input checks, after authentication and permissions: DRF calls throttles right after those, so
:class:`RequestChecks` is registered as one (it never throttles). Text the database cannot store (NUL characters,
unpaired surrogates), query parameters the operation does not take, and values outside a parameter's enum, type or
bounds are a 400 naming what is accepted, the parameters as /api/schema/ documents them (config.api_contract). So a
request without a token is a 401 and a physician asking for labels a 403 whatever the query holds.

A module of its own: DRF imports it from the settings while its views module loads, before drf-spectacular can be.
"""

from __future__ import annotations

import re

from django.http.multipartparser import MultiPartParserError
from django.utils.translation import gettext as _
from rest_framework.exceptions import ParseError
from rest_framework.throttling import BaseThrottle

_INTEGER = re.compile(r"-?[0-9]+")
_NUMBER = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_BOOLEANS = ("true", "false", "1", "0")


def _refusal(name: str, schema: dict, value: str) -> str | None:
    """Why ``value`` does not fit the parameter's schema, or None."""
    shown = repr(value[:40])
    if value == "" and schema.get("type") in ("integer", "number", "boolean"):
        return None  # empty: as if not given (?limit=&offset=)
    if "enum" in schema and value not in schema["enum"]:
        return _('Query parameter "%(name)s" must be one of: %(values)s; got %(got)s.') % {
            "name": name, "values": ", ".join(map(str, schema["enum"])), "got": shown}
    kind = schema.get("type")
    if kind == "integer":
        low, high = schema.get("minimum"), schema.get("maximum")
        if (not _INTEGER.fullmatch(value) or (low is not None and int(value) < low)
                or (high is not None and int(value) > high)):
            if high is not None:
                return _('Query parameter "%(name)s" must be a whole number from %(low)s to %(high)s; got %(got)s.'
                         ) % {"name": name, "low": low, "high": high, "got": shown}
            return _('Query parameter "%(name)s" must be a whole number of %(low)s or more; got %(got)s.') % {
                "name": name, "low": low or 0, "got": shown}
    elif kind == "number":
        if not _NUMBER.fullmatch(value):
            return _('Query parameter "%(name)s" must be a number; got %(got)s.') % {"name": name, "got": shown}
    elif kind == "boolean":
        if value.lower() not in _BOOLEANS:
            return _('Query parameter "%(name)s" must be true or false; got %(got)s.') % {"name": name, "got": shown}
    elif kind == "string" and len(value) < schema.get("minLength", 0):
        return _('Query parameter "%(name)s" must not be empty.') % {"name": name}
    elif kind == "string" and schema.get("format") == "date-time" and not _is_datetime(value):
        return _('Query parameter "%(name)s" must be a date and time in ISO 8601 (2026-05-01T09:30:00Z); got '
                 '%(got)s.') % {"name": name, "got": shown}
    return None


def _is_datetime(value: str) -> bool:
    from django.utils.dateparse import parse_datetime

    try:
        return parse_datetime(value) is not None
    except ValueError:  # well formed, but no such date or time
        return False


def check_query(request, view) -> None:
    """A 400 for a query parameter the operation does not take, or a value its schema does not allow."""
    from config.api_contract import operation_parameters

    parameters = operation_parameters(view, request.method)
    if parameters is None:
        return
    for name, values in request.query_params.lists():
        if name not in parameters and name != "format":  # DRF's own ?format= (json, api) is on every view
            accepted = ", ".join(sorted(parameters)) or "none"
            raise ParseError(_('Unknown query parameter "%(name)s"; this operation takes: %(accepted)s.') % {
                "name": name[:40], "accepted": accepted})
        for value in values:
            problem = _refusal(name, parameters[name], value)
            if problem:
                raise ParseError(problem)


def check_text(request) -> None:
    """A 400 for text the database cannot store (config.failures' checks, run here for the API so that they come
    after authentication and permissions)."""
    from config.failures import FORM_TYPES, NUL_MESSAGE, _has_nul, json_body_problem

    django_request = request._request
    has_nul = "\x00" in django_request.path or _has_nul(django_request.GET)
    if not has_nul and django_request.method == "POST" and django_request.content_type in FORM_TYPES:
        try:
            has_nul = _has_nul(django_request.POST)
        except MultiPartParserError as exc:  # e.g. multipart/form-data without a boundary
            raise ParseError(_("The multipart body cannot be read: %(error)s") % {"error": exc}) from None
    if has_nul:
        raise ParseError(NUL_MESSAGE)
    if django_request.method in ("POST", "PUT", "PATCH"):
        problem = json_body_problem(django_request)
        if problem:
            raise ParseError(problem)


class RequestChecks(BaseThrottle):
    """The API's input checks after authentication and permissions (see the module); never throttles."""

    def allow_request(self, request, view) -> bool:
        check_text(request)
        check_query(request, view)
        return True
