"""Gives each pytest-xdist worker process a world of its own, before Django's settings are read.

Loaded with ``-p tests.xdist_env`` (pyproject.toml), so it runs before pytest-django imports the settings. In a worker
(``PYTEST_XDIST_WORKER`` = gw0, gw1, ...) it sets:

* ``MINICEX_VAR_DIR``: the embedded mode's SQLite test database, filesystem broker, file cache and limiter files in
  ``var/test-<worker>/`` (PostgreSQL test databases get pytest-django's ``_gw0`` suffix by themselves);
* the Celery queue names and remote-control exchange with the worker's suffix, so the Celery workers a test starts
  never take another test process's messages nor answer its pings (the health check's "no worker" test saw the
  other process's worker on the shared Redis broker);
* a Redis cache database of its own (``CACHE_URL``): tests empty the cache, which must not reach the other process.

Outside xdist (one process) nothing changes.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent


def isolate(worker: str, environ: os._Environ | dict = os.environ) -> None:
    number = int(re.sub(r"\D", "", worker) or 0)
    base = Path(environ.get("MINICEX_VAR_DIR") or BASE_DIR / "var")
    environ["MINICEX_VAR_DIR"] = str(base / f"test-{worker}")
    for name, default in (("CELERY_TASK_DEFAULT_QUEUE", "minicex-test"), ("CELERY_LLM_QUEUE", "minicex-test-llm"),
                          ("CELERY_CONTROL_EXCHANGE", "celery")):
        environ[name] = f"{environ.get(name) or default}-{worker}"
    cache_url = environ.get("CACHE_URL", "")
    match = re.fullmatch(r"(rediss?://[^/]+)/(\d+)", cache_url)
    if match:
        # The broker's own database is left alone: counting down from the cache's database.
        environ["CACHE_URL"] = f"{match.group(1)}/{max(0, int(match.group(2)) - number)}"


_worker = os.environ.get("PYTEST_XDIST_WORKER")
if _worker:
    isolate(_worker)
