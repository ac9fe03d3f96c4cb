"""Showing LLM endpoints and provider errors on pages: short, with no header, key or URL credentials."""

from urllib.parse import urlsplit, urlunsplit

from django import template

from scoring.llm.keys import sanitize_error

register = template.Library()


@register.filter
def provider_error(text):
    """Errors stored before sanitising existed are cleaned here too (room for our own wording around the
    provider's text, which the gateway already shortened)."""
    return sanitize_error(text, limit=600)


@register.filter
def public_url(url):
    """An endpoint URL without user, password or query (where keys sometimes hide)."""
    if not url:
        return ""
    parts = urlsplit(str(url))
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))
