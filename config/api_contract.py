"""The API's contract, kept in one place: what /api/schema/ promises and what every API request is checked against.

* :class:`ContractSchema` (drf-spectacular's schema class for every view) bounds integer parameters as the server
  does (ids 0 to 2**63-1), adds the project parameters (``X-Project`` header, ``?project=``) to every operation that
  authenticates, and records each operation's query parameters for :class:`RequestChecks`.
* :func:`document_errors` (a postprocessing hook) adds every error status an operation can answer, each with the one
  error body of the API (:data:`ERROR_SCHEMA`: ``detail`` plus field errors), and the schema's version.
* :func:`operation_parameters` gives an operation's documented query parameters to the request checks
  (config.api_checks), so that the schema and the server's refusals cannot disagree.
"""

from __future__ import annotations

import threading

from drf_spectacular.openapi import AutoSchema
from rest_framework import serializers

MAX_ID = 2**63 - 1
#: info.version of /api/schema/: raised with every breaking change (docs/api.md lists them).
VERSION = "2.0.0"

ERROR_SCHEMA = {
    "type": "object",
    "description": "Every error of the API: a readable ``detail``; invalid fields also by name (a list of messages "
                   "each); some refusals add their own keys (``missing`` items of a submit, ``errors`` by line).",
    "properties": {"detail": {"type": "string", "description": "What went wrong, in one message."}},
    "required": ["detail"],
    "additionalProperties": True,
}

# Status -> why any operation may answer it; "auth" ones only where the operation authenticates.
_COMMON = {
    "400": "Invalid input: a parameter, field or body the operation does not accept (the message says which).",
    "404": "No such object in the request's project (another project's object too), or no such project in "
           "X-Project / ?project=.",
    "406": "No representation for the Accept header.",
    "503": "The database is unreachable (Retry-After says when to try again).",
}
_AUTH = {
    "401": "No token, or a bad or expired one (WWW-Authenticate: Token).",
    "403": "Your role in the project does not allow this.",
}
_WRITE = {
    "409": "The object's state does not allow this now (closed, submitted, drawn, or changed at the same time).",
    "415": "A body in a media type the operation does not read.",
}

_operations: dict[tuple, dict[str, dict]] = {}
_operations_lock = threading.Lock()


def _key(view, method: str) -> tuple:
    return type(view), getattr(view, "action", None), method.upper()


def _authenticates(view) -> bool:
    return bool(getattr(view, "authentication_classes", None))


PROJECT_PARAMETERS = [
    {"name": "X-Project", "in": "header", "required": False, "schema": {"type": "string"},
     "description": "The project to work in, by name or id (absent or empty: your current project)."},
    {"name": "project", "in": "query", "required": False, "schema": {"type": "string"},
     "description": "The project to work in, by name or id, when the X-Project header cannot be sent."},
]


class ContractSchema(AutoSchema):
    """drf-spectacular's AutoSchema with the server's bounds and the project parameters (see the module)."""

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        """Text a field refuses blank has minLength 1 and, where whitespace is trimmed first, must hold a
        non-space character; a list that may not be empty has minItems 1."""
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if direction == "request" and not field.read_only and "$ref" not in schema:
            if isinstance(field, serializers.CharField) and not field.allow_blank and schema.get("type") == "string":
                schema["minLength"] = max(1, schema.get("minLength", 0))
                if field.trim_whitespace and "pattern" not in schema and "enum" not in schema:
                    schema["pattern"] = r"\S"
            if isinstance(field, serializers.ListSerializer) and not field.allow_empty:
                schema["minItems"] = max(1, schema.get("minItems", 0))
        return schema

    def _get_parameters(self) -> list[dict]:
        parameters = super()._get_parameters()
        for parameter in parameters:
            schema = parameter.get("schema", {})
            if schema.get("type") == "integer" and parameter["name"] not in ("limit", "offset"):  # paging: any
                schema.setdefault("minimum", 0)
                schema.setdefault("maximum", MAX_ID)
        if _authenticates(self.view):
            taken = {(p["name"], p["in"]) for p in parameters}
            parameters += [dict(p, schema=dict(p["schema"])) for p in PROJECT_PARAMETERS
                           if (p["name"], p["in"]) not in taken]
        with _operations_lock:
            _operations[_key(self.view, self.method)] = {p["name"]: p.get("schema", {}) for p in parameters
                                                          if p["in"] == "query"}
        return parameters


def document_errors(result: dict, generator, request, public) -> dict:
    """Postprocessing hook: the error statuses of every operation with the API's one error body, and the version."""
    result.setdefault("info", {})["version"] = VERSION
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            statuses = dict(_COMMON)
            if any(operation.get("security") or []):  # none on the token endpoint
                statuses.update(_AUTH)
            else:
                statuses.pop("404")
            if method in ("post", "put", "patch", "delete"):
                statuses.update(_WRITE if statuses.get("401") else {"415": _WRITE["415"]})
            if path == "/api/auth/token/":
                statuses["401"] = "Wrong username or password (WWW-Authenticate: Token)."
                statuses["429"] = "Too many failed passwords: try again after Retry-After seconds."
            responses = operation.setdefault("responses", {})
            for status, description in statuses.items():
                found = responses.get(status)
                if found is None or "content" not in found:
                    responses[status] = {"description": (found or {}).get("description") or description,
                                         "content": error}
    return result


def operation_parameters(view, method: str) -> dict[str, dict] | None:
    """The query parameters (name -> JSON schema) the schema documents for this view and method, or None for a
    method it does not document (answered 405 by the view)."""
    if not _operations:
        from drf_spectacular.generators import SchemaGenerator

        SchemaGenerator().get_schema(request=None, public=True)  # fills _operations (about 0.1 s, once a process)
    return _operations.get(_key(view, method))
