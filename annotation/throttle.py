"""Login throttling: count failed logins per username and per client address in the cache."""

from __future__ import annotations

from django.conf import settings
from django.core.cache import cache


def _keys(username: str, address: str) -> list[str]:
    return [f"login-fail:user:{username.strip().lower()}", f"login-fail:addr:{address}"]


def client_address(request) -> str:
    # Behind a proxy, configure it to set REMOTE_ADDR (e.g. gunicorn --forwarded-allow-ips).
    return request.META.get("REMOTE_ADDR", "unknown")


def is_locked(username: str, address: str) -> bool:
    limit = settings.LOGIN_MAX_FAILURES
    return any((cache.get(key) or 0) >= limit for key in _keys(username, address))


def record_failure(username: str, address: str) -> None:
    for key in _keys(username, address):
        if not cache.add(key, 1, timeout=settings.LOGIN_LOCKOUT_SECONDS):
            try:
                cache.incr(key)
            except ValueError:  # expired between add and incr
                cache.set(key, 1, timeout=settings.LOGIN_LOCKOUT_SECONDS)


def reset(username: str, address: str) -> None:
    cache.delete_many(_keys(username, address))
