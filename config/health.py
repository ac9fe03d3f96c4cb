"""Service checks shared by ``/healthz``, the system page and the start-up preflight."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import connections


def _redact(url: str) -> str:
    """Hide the password in a service URL before showing it."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urlunsplit(parts._replace(netloc=netloc))
    return url


def check_database() -> dict[str, Any]:
    started = time.monotonic()
    db = settings.DATABASES["default"]
    info: dict[str, Any] = {"vendor": connections["default"].vendor, "name": str(db.get("NAME"))}
    try:
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:
        return {**info, "ok": False, "error": _first_line(exc)}
    return {**info, "ok": True, "ms": round((time.monotonic() - started) * 1000, 1)}


def check_broker(timeout: float = 3.0) -> dict[str, Any]:
    from config.celery import app

    started = time.monotonic()
    url = app.conf.broker_url
    info: dict[str, Any] = {"url": _redact(url), "transport": url.split("://", 1)[0]}
    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=timeout)
            # ensure_connection is lazy for some transports; a channel proves the broker answers.
            conn.default_channel  # noqa: B018
    except Exception as exc:
        return {**info, "ok": False, "error": _first_line(exc)}
    return {**info, "ok": True, "ms": round((time.monotonic() - started) * 1000, 1)}


def check_workers(timeout: float = 1.5) -> dict[str, Any]:
    from config.celery import app

    try:
        replies = app.control.ping(timeout=timeout)
    except Exception as exc:
        return {"ok": False, "count": 0, "workers": [], "error": _first_line(exc)}
    names = sorted(name for reply in replies for name in reply)
    result: dict[str, Any] = {"ok": bool(names), "count": len(names), "workers": names}
    if not names:
        result["error"] = (
            f"no Celery worker answered a ping within {timeout:g} s; start one with `python -m config.run worker`"
        )
    return result


# Facts about pending work that apps add to the staff view of /healthz (name -> callable returning a dict);
# registered from AppConfig.ready, so this module imports no app.
DETAILS: dict[str, Callable[[], dict[str, Any]]] = {}


def register_detail(name: str, fn: Callable[[], dict[str, Any]]) -> None:
    DETAILS[name] = fn


def health() -> tuple[bool, dict[str, Any]]:
    """All checks; the broker is pinged for workers only when it is reachable."""
    database = check_database()
    broker = check_broker()
    workers = check_workers() if broker["ok"] else {"ok": False, "count": 0, "workers": [],
                                                    "error": "broker unreachable"}
    ok = database["ok"] and broker["ok"] and workers["ok"]
    body = {"status": "ok" if ok else "degraded", "database": database, "broker": broker, "workers": workers}
    if database["ok"]:
        for name, fn in DETAILS.items():
            try:
                body[name] = fn()
            except Exception as exc:
                body[name] = {"error": _first_line(exc)}
    return ok, body


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")
