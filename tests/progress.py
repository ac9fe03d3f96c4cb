"""Collection progress for ``make test``: pytest (and each pytest-xdist worker) says nothing while it imports the
test files, which takes a while; this plugin prints a line every few seconds while it collects and one at the end with
the count, the time and the slowest test files to import.

Loaded with ``-p tests.progress`` (pyproject.toml). Under xdist only the first worker (gw0) prints (every worker
collects the same files); its lines go to the terminal's stderr directly, since xdist shows nothing of a worker's
output until the tests run. ``PYTEST_PROGRESS=0`` turns it off.
"""

from __future__ import annotations

import os
import sys
import time

import pytest

EVERY_SECONDS = 3.0
SLOWEST_SHOWN = 5


def _terminal():
    """The process's stderr as it is before pytest captures it (this module is imported while pytest reads its
    options, before capturing starts)."""
    try:
        return os.fdopen(os.dup(sys.stderr.fileno()), "w", buffering=1, encoding="utf-8", errors="replace")
    except (OSError, ValueError):
        return None


def _process_age() -> float | None:
    """Seconds since this process started (Linux), else None."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            started = int(stat.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
            return float(uptime.read().split()[0]) - started
    except (OSError, ValueError, IndexError):
        return None


_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
_ENABLED = os.environ.get("PYTEST_PROGRESS", "1") != "0" and _WORKER in (None, "gw0")
_OUT = _terminal() if _ENABLED else None


class CollectionProgress:
    def __init__(self, out, worker: str | None):
        self.out = out
        self.prefix = f"[{worker}] " if worker else ""
        self.started = time.perf_counter()
        self.last_line = self.started
        self.files = 0
        self.tests = 0
        self.file_started: dict[str, float] = {}
        self.file_seconds: dict[str, float] = {}
        self.total_files: int | None = None

    def say(self, text: str) -> None:
        self.out.write(f"{self.prefix}{text}\n")
        self.out.flush()

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session):
        self.started = self.last_line = time.perf_counter()
        age = _process_age()
        self.say("collecting tests (importing the test files)"
                 + (f"; pytest and Django started in {age:.1f} s" if age is not None else "") + "...")

    def pytest_collectstart(self, collector):
        if isinstance(collector, pytest.Module):
            self.file_started[collector.nodeid] = time.perf_counter()

    def pytest_itemcollected(self, item):
        self.tests += 1

    def pytest_collectreport(self, report):
        started = self.file_started.pop(report.nodeid, None)
        if started is None:
            return
        now = time.perf_counter()
        self.file_seconds[report.nodeid] = now - started
        self.files += 1
        if now - self.last_line >= EVERY_SECONDS:
            self.last_line = now
            self.say(f"  collecting: {self.files} test files, {self.tests} tests so far ({now - self.started:.0f} s; "
                     f"now {report.nodeid})")

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session):
        seconds = time.perf_counter() - self.started
        slowest = sorted(self.file_seconds.items(), key=lambda pair: -pair[1])[:SLOWEST_SHOWN]
        shown = ", ".join(f"{name} {value:.1f} s" for name, value in slowest)
        self.say(f"collected {len(session.items)} tests from {self.files} files in {seconds:.1f} s "
                 f"(slowest to import: {shown}); running them"
                 + (" in every worker, progress below" if _WORKER else ""))


def pytest_configure(config):
    controller = _WORKER is None and getattr(config.option, "dist", "no") != "no"  # xdist's: it collects nothing
    if _OUT is not None and not controller:
        config.pluginmanager.register(CollectionProgress(_OUT, _WORKER), "collection-progress")
