"""Which environment variables may hold an LLM endpoint's key, and scrubbing provider error text.

A judge or a generation job names the *variable* that holds its key and the gateway sends that variable's value as
``Authorization: Bearer`` to the endpoint. Any name would let whoever writes the name send ``SECRET_KEY`` or
``DATABASE_URL`` to a URL of their choice, so only these names are accepted, everywhere (forms, commands, admin and
again when a request is sent): ``OPENAI_API_KEY``, names starting with ``LLM_KEY_``, and the names an administrator
lists in the setting ``LLM_KEY_VARIABLES``.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError

DEFAULT_KEY_VARIABLE = "OPENAI_API_KEY"
PREFIX = "LLM_KEY_"
_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
# Longest provider error text kept on a run, a job or a page.
MAX_ERROR_CHARS = 300


class KeyVariableRefused(ValueError):
    """The name is not one of the variables an LLM key may come from; the message lists the allowed names."""


def listed_variables() -> list[str]:
    """Extra names an administrator allowed in ``LLM_KEY_VARIABLES`` (comma-separated in the environment)."""
    return [name for name in getattr(settings, "LLM_KEY_VARIABLES", []) if name]


def allowed_names_text() -> str:
    extra = listed_variables()
    listed = f", or one listed in LLM_KEY_VARIABLES ({', '.join(extra)})" if extra else (
        " (an administrator can allow more names in the setting LLM_KEY_VARIABLES)")
    return f"{DEFAULT_KEY_VARIABLE} or a name starting with {PREFIX} (capital letters, digits and _){listed}"


def is_allowed(name: str) -> bool:
    name = (name or "").strip()
    if not _NAME.match(name):
        return False
    return name == DEFAULT_KEY_VARIABLE or (name.startswith(PREFIX) and len(name) > len(PREFIX)) or (
        name in listed_variables())


def refusal(name: str) -> str:
    return (f"{(name or '').strip()[:60]!r} cannot hold an LLM key: give the NAME of an environment variable "
            f"(never the key itself) that is {allowed_names_text()}.")


def check_key_variable(name: str) -> str:
    """The name, stripped (empty means ``OPENAI_API_KEY``), or ``KeyVariableRefused`` naming the allowed names."""
    name = (name or "").strip() or DEFAULT_KEY_VARIABLE
    if not is_allowed(name):
        raise KeyVariableRefused(refusal(name))
    return name


def validate_key_variable(value: str) -> None:
    """Model and form field validator."""
    try:
        check_key_variable(value)
    except KeyVariableRefused as exc:
        raise ValidationError(str(exc), code="key_variable") from None


def validate_base_url(value: str) -> None:
    """An endpoint's base URL: http(s), with a host, and no credentials (the key comes from its variable)."""
    if not value:
        return
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError("Give an http(s) URL, e.g. https://api.openai.com/v1.", code="base_url")
    if parts.username or parts.password:
        raise ValidationError("Never put credentials in the URL: the key comes from the key variable.",
                              code="base_url")


# ---------------------------------------------------------------------------------------------------------------
# provider error text
# ---------------------------------------------------------------------------------------------------------------
_HEADER_LINE = re.compile(r"(?i)\b(authorization|proxy-authorization|x-api-key|api-key|cookie|set-cookie)\b['\"]?"
                          r"\s*[:=]\s*['\"]?[^'\"\n,;}]*")
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[^\s,;'\"]+")
_KEY_LIKE = re.compile(r"\b(sk|pk|rk|ak)-[A-Za-z0-9_-]{8,}|\b[A-Za-z0-9_-]{32,}\b")
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s:@]+(:[^/\s@]*)?@")
_QUERY_SECRET = re.compile(r"(?i)([?&](?:api[-_]?key|key|token|access_token|sig|signature)=)[^&\s'\"]+")


def _secret_values() -> list[str]:
    """Values of the variables that may hold keys, and of the server's own secrets, to blank if echoed."""
    names = {DEFAULT_KEY_VARIABLE, *listed_variables(), "SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL",
             "CACHE_URL", "LIMITER_URL"}
    names |= {name for name in os.environ if name.startswith(PREFIX)}
    values = [os.environ.get(name, "") for name in names]
    values.append(getattr(settings, "SECRET_KEY", "") or "")
    return sorted({v for v in values if len(v) >= 6}, key=len, reverse=True)


def sanitize_error(text: str | None, limit: int = MAX_ERROR_CHARS) -> str:
    """Provider error text fit to store and show: one line, shortened, with anything that looks like a header,
    a bearer token, a key, a URL's credentials or a server secret blanked out."""
    if not text:  # every successful call makes an Outcome too: keep that path free
        return ""
    text = " ".join(str(text).split())
    for value in _secret_values():
        text = text.replace(value, "[redacted]")
    text = _HEADER_LINE.sub(lambda m: f"{m.group(1)}: [redacted]", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} [redacted]", text)
    text = _URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}***@", text)
    text = _QUERY_SECRET.sub(lambda m: f"{m.group(1)}[redacted]", text)
    text = _KEY_LIKE.sub("[redacted]", text)
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text
