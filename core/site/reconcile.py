"""The reconciler: the database is the source of truth for pending work; the broker only wakes workers up.

Every Celery worker runs the reconciler in a thread of its main process (started when the worker is ready), so no
extra scheduler process has to be deployed and monitored, and it runs exactly where the work can be done: with no
worker running, nothing could resume anyway. Each app registers hooks (``register``) that look for work a lost
message left behind — a judge run, preference judging or generation job with units nobody works on, a report job
whose message died with the broker, a Delphi round with reminders due — and queue it again. Hooks are idempotent and
cheap, and each queues a piece of work only after a conditional update of a timestamp, so several workers running
them at once queue it once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)


@dataclass
class Hook:
    name: str
    fn: Callable[[], Any]
    every: float | None = None  # seconds; None = RECONCILE_SECONDS
    last: float = field(default=0.0)


HOOKS: dict[str, Hook] = {}


def register(name: str, fn: Callable[[], Any], every: float | None = None) -> None:
    """Add (or replace) a hook; apps call this from ``AppConfig.ready``."""
    HOOKS[name] = Hook(name, fn, every)


def run_once(*, force: bool = True) -> dict[str, Any]:
    """Run every hook that is due (all of them with ``force``) and return what each reported."""
    from django.conf import settings
    from django.db import close_old_connections

    default = float(getattr(settings, "RECONCILE_SECONDS", 5))
    results: dict[str, Any] = {}
    for hook in list(HOOKS.values()):
        now = time.monotonic()
        if not force and now - hook.last < (hook.every or default):
            continue
        hook.last = now
        close_old_connections()
        try:
            results[hook.name] = hook.fn()
        except Exception as exc:  # a database or broker outage: try again on the next pass
            log.warning("reconciler hook %r failed: %s", hook.name, exc)
            results[hook.name] = {"error": str(exc)}
            close_old_connections()
    return results


class Supervisor(threading.Thread):
    """Runs the hooks every second (each at its own interval) until stopped."""

    def __init__(self) -> None:
        super().__init__(name="reconciler", daemon=True)
        self.stopping = threading.Event()

    def run(self) -> None:
        run_once(force=True)
        while not self.stopping.wait(1.0):
            run_once(force=False)


_supervisor: Supervisor | None = None
_lock = threading.Lock()


def start() -> None:
    global _supervisor
    with _lock:
        if _supervisor is None or not _supervisor.is_alive():
            _supervisor = Supervisor()
            _supervisor.start()


def stop() -> None:
    global _supervisor
    with _lock:
        if _supervisor is not None:
            _supervisor.stopping.set()
            _supervisor = None
