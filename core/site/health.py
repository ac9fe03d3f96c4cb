"""Service checks shared by ``/healthz``, the system page and the start-up preflight.

Pinging the workers is the slow check: Celery waits the whole timeout for answers (3 s per call with the
filesystem broker, whose workers read their control messages once a second). Its result is kept in the cache, which
every web process shares, and reused while it is fresh (:data:`WORKERS_FRESH`); a somewhat older one is still
answered at once while a background thread pings again (:data:`WORKERS_STALE`), and anything older is pinged for
in the request. Staff see how old the answer is (``checked_seconds_ago``). The system page never waits for a
ping (``wait=False``): it shows the last answer however old, with its age, or "checking" while the first one runs in
the background, and looks again (:func:`answered_since`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import connections

# The project's Celery app, registered by the configuration that makes it (config.celery): this floor imports none.
_celery_apps: list[Any] = []


def register_celery_app(app: Any) -> None:
    _celery_apps[:] = [app]


def celery_app() -> Any:
    """The registered Celery app (config.celery registers it when Django's settings are first imported)."""
    if not _celery_apps:
        raise RuntimeError("no Celery app is registered; config.celery registers it")
    return _celery_apps[0]


def redact_url(url: str) -> str:
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
    app = celery_app()
    started = time.monotonic()
    url = app.conf.broker_url
    info: dict[str, Any] = {"url": redact_url(url), "transport": url.split("://", 1)[0]}
    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=timeout)
            # ensure_connection is lazy for some transports; a channel proves the broker answers.
            conn.default_channel  # noqa: B018
    except Exception as exc:
        return {**info, "ok": False, "error": _first_line(exc)}
    return {**info, "ok": True, "ms": round((time.monotonic() - started) * 1000, 1)}


# (ok, not ok) -> seconds: a ping that found workers is reused for 10 s and answered while a new one runs for up to
# 30 s; one that found none is repeated sooner (workers may be starting).
WORKERS_FRESH = {True: 10.0, False: 2.0}
WORKERS_STALE = {True: 30.0, False: 10.0}
_WORKERS_KEY = "minicex:health:workers"
_refreshing = threading.Lock()
log = logging.getLogger("minicex.health")


def _cache():
    from django.core.cache import cache

    return cache


def _remembered() -> dict[str, Any] | None:
    try:
        return _cache().get(_WORKERS_KEY)
    except Exception:  # the cache is down (Redis): ping every time rather than fail the health check
        return None


def _remember(result: dict[str, Any]) -> None:
    with contextlib.suppress(Exception):  # a cache that is down only costs the next call a ping
        _cache().set(_WORKERS_KEY, result, timeout=int(max(WORKERS_STALE.values())) + 5)


def _refresh(timeout: float) -> None:
    try:
        _remember(ping_workers(timeout))
    finally:
        _refreshing.release()


def _refresh_in_background(timeout: float) -> bool:
    """Ping in a background thread unless one already does; whether a ping is now on the way."""
    if _refreshing.acquire(blocking=False):
        threading.Thread(target=_refresh, args=(timeout,), name="health-ping", daemon=True).start()
        return True
    return _refreshing.locked()


def check_workers(timeout: float = 1.5, *, wait: bool = True) -> dict[str, Any]:
    """Whether Celery workers answer, from a recent ping when there is one (see the module docstring). Without
    ``wait`` never pings in the caller's thread: the last answer however old (pinging again behind it when it is
    not fresh), or, when there is none yet, ``{"pending": True, "ok": False, ...}`` while a first ping runs."""
    cached = _remembered()
    if cached is not None:
        age = max(0.0, time.time() - cached["checked_at"])
        if age < WORKERS_STALE[cached["ok"]] or not wait:
            refreshing = age >= WORKERS_FRESH[cached["ok"]] and _refresh_in_background(timeout)
            body = _aged(cached, age)
            return body if wait else {**body, "checked_at": cached["checked_at"], "refreshing": refreshing}
    if not wait:
        _refresh_in_background(timeout)
        return {"ok": False, "pending": True, "refreshing": True, "count": 0, "workers": [], "checked_at": 0.0,
                "checked_seconds_ago": None, "error": "the workers are being pinged"}
    result = ping_workers(timeout)
    _remember(result)
    return _aged(result, 0.0)


def answered_since(checked_at: float) -> bool:
    """Whether a worker ping newer than the one checked at ``checked_at`` (epoch seconds; 0: none) has answered."""
    cached = _remembered()
    return cached is not None and cached["checked_at"] > checked_at


def _aged(result: dict[str, Any], age: float) -> dict[str, Any]:
    body = {key: value for key, value in result.items() if key != "checked_at"}
    body["checked_seconds_ago"] = round(age, 1)
    return body


def ping_workers(timeout: float = 1.5) -> dict[str, Any]:
    """Ping the workers through the broker now (takes ``timeout``)."""
    app = celery_app()
    checked_at = time.time()
    try:
        replies = app.control.ping(timeout=timeout)
    except Exception as exc:
        return {"ok": False, "count": 0, "workers": [], "error": _first_line(exc), "checked_at": checked_at}
    names = sorted(name for reply in replies for name in reply)
    result: dict[str, Any] = {"ok": bool(names), "count": len(names), "workers": names, "checked_at": checked_at}
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


def health(details: bool = True, *, wait: bool = True) -> tuple[bool, dict[str, Any]]:
    """All checks; the broker is pinged for workers only when it is reachable. ``details``: also the facts apps
    registered (:data:`DETAILS`, database queries), which only staff see. ``wait``: see :func:`check_workers`
    (status "checking" while the first ping runs behind a page that does not wait)."""
    database = check_database()
    broker = check_broker()
    workers = check_workers(wait=wait) if broker["ok"] else {"ok": False, "count": 0, "workers": [],
                                                             "error": "broker unreachable"}
    ok = database["ok"] and broker["ok"] and workers["ok"]
    status = "ok" if ok else "checking" if database["ok"] and broker["ok"] and workers.get("pending") else "degraded"
    body = {"status": status, "database": database, "broker": broker, "workers": workers}
    if database["ok"] and details:
        for name, fn in DETAILS.items():
            try:
                body[name] = fn()
            except Exception as exc:
                body[name] = {"error": _first_line(exc)}
    return ok, body


_last_logged: list[str] = [""]  # what this process last logged about a degraded check ("" while all is up)


def log_answer(ok: bool, body: dict[str, Any]) -> None:
    """One line for an answer of 503: what is down. Not an error of the app (workers may still be starting): a
    warning when the reason changed since this process last logged it, else an info line; one info line when all
    is up again."""
    if ok:
        if _last_logged[0]:
            log.info("health check ok again after: %s", _last_logged[0])
            _last_logged[0] = ""
        return
    reasons = "; ".join(f"{name}: {body[name].get('error') or 'down'}" for name in ("database", "broker", "workers")
                        if not body[name]["ok"])
    level = logging.WARNING if reasons != _last_logged[0] else logging.INFO
    _last_logged[0] = reasons
    log.log(level, "health check degraded, answered 503: %s", reasons)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")
