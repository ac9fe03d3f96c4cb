"""One JSON reader for every request body, pages and API alike: bad input is refused at the door with a 400 that
says why, before any view looks anything up.

Refused: bodies that are not UTF-8 or not JSON, nesting deeper than :data:`MAX_DEPTH` (a 100,000-deep array made
the parser recurse until it crashed), numbers that are not finite (``1e400``, ``NaN``, ``Infinity``) and whole
numbers longer than :data:`MAX_DIGITS` digits (a 5,000-digit id). Python's own parser checks none of these before
the view's arithmetic fails on them."""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 64
MAX_DIGITS = 30
MAX_NUMBER_TEXT = 64


class BadJSON(ValueError):
    """A request body the app will not read; the message is for the person who sent it."""


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise BadJSON(f"A number in the request has {len(text.lstrip('-')):,} digits; at most {MAX_DIGITS} are "
                      "accepted.")
    return int(text)


def _float(text: str) -> float:
    if len(text) > MAX_NUMBER_TEXT:
        raise BadJSON(f"A number in the request is {len(text):,} characters long; at most {MAX_NUMBER_TEXT} are "
                      "accepted.")
    value = float(text)
    if not math.isfinite(value):
        raise BadJSON(f"The number {text[:20]} is too large to be used (it is not finite).")
    return value


def _constant(name: str):
    raise BadJSON(f"{name} is not a number the app accepts; send a finite number.")


def _too_deep(text: str) -> bool:
    """Whether brackets nest deeper than MAX_DEPTH outside strings (checked before parsing: the parser itself
    recurses)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return False
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif char in "]}":
            depth -= 1
    return False


def loads(raw: bytes | str) -> Any:
    """The parsed body; raises BadJSON (with a message for the sender) for anything refused."""
    if isinstance(raw, bytes | bytearray):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise BadJSON("The request body is not valid UTF-8 text.") from None
    else:
        text = raw
    if _too_deep(text):
        raise BadJSON(f"The JSON in the request nests deeper than {MAX_DEPTH} levels.")
    try:
        return json.loads(text, parse_int=_integer, parse_float=_float, parse_constant=_constant)
    except BadJSON:
        raise
    except RecursionError:
        raise BadJSON(f"The JSON in the request nests deeper than {MAX_DEPTH} levels.") from None
    except ValueError as exc:
        raise BadJSON(f"The request body is not valid JSON ({exc}).") from None


def is_json(request) -> bool:
    content_type = request.content_type or ""
    return content_type == "application/json" or content_type.endswith("+json")


def request_json(request) -> Any:
    """The request's JSON body, parsed once per request by the same rules (None for an empty body)."""
    cached = getattr(request, "_minicex_json", _UNSET)
    if cached is not _UNSET:
        return cached
    body = request.body
    data = loads(body) if body else None
    request._minicex_json = data
    return data


_UNSET = object()


def drf_parser():
    """DRF's JSON parser class reading with :func:`loads` (the body the middleware already read is not parsed
    twice)."""
    from rest_framework.exceptions import ParseError
    from rest_framework.parsers import JSONParser

    class SafeJSONParser(JSONParser):
        def parse(self, stream, media_type=None, parser_context=None):
            request = getattr((parser_context or {}).get("request"), "_request", None)
            try:
                if request is not None:
                    return request_json(request)
                return loads(stream.read() if stream is not None else b"")
            except BadJSON as exc:
                raise ParseError(str(exc)) from None

    return SafeJSONParser

