"""Write the bytecode of every module the app imports, once, at install.

Where ``PYTHONDONTWRITEBYTECODE`` is set (many container images set it) and the installer did not compile
(uv does not by default), every process compiled each module it imported from source: about 7 s of CPU for the
web server, each worker and each migration before it did anything. This imports every module of the app's
packages (and, for ``dev``, the test tools) in a process allowed to write bytecode, so Python writes the
``__pycache__`` files of exactly what the app uses; later processes read them whatever the variable says.
Importing is all it does: no database, broker or network is touched.

Run by scripts/install.sh:  python scripts/warm_bytecode.py [app|dev]
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
PACKAGES = ("config", "projects", "core", "annotation", "scoring", "delphi", "studies")
# What production mode (PostgreSQL, Redis) adds to the embedded mode this process imports in.
PRODUCTION = ("psycopg", "django.db.backends.postgresql.base", "redis", "kombu.transport.redis",
              "django.core.cache.backends.redis")
# Libraries the app imports inside functions (so that a process imports them only when it computes or sends): the
# app's own modules do not import them, so they are named here. openai alone is seconds of compiling: a worker
# started where PYTHONDONTWRITEBYTECODE is set compiled it before its first request (a replacement LLM worker's
# start, while its dead predecessor's units wait).
LAZY = ("openai", "aiohttp", "httpx2", "pandas", "numpy", "scipy.stats", "scipy.special", "scipy.sparse",
        "statsmodels.stats.inter_rater", "statsmodels.stats.proportion", "pingouin", "krippendorff",
        "factor_analyzer.factor_analyzer", "matplotlib.pyplot", "openpyxl", "docx", "rocrate.rocrate", "pyreadstat",
        "segno", "polib")
TEST_TOOLS = ("pytest", "pytest_django", "xdist", "playwright.sync_api", "django.test", "django.test.runner")


def modules_of(package: str) -> list[str]:
    """The dotted names of every module in ``package`` (and its sub-packages), the package first."""
    root = importlib.import_module(package)
    names = [package]
    for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
        names.append(info.name)
    return names


def main(mode: str) -> int:
    sys.dont_write_bytecode = False
    sys.path.insert(0, str(BASE_DIR))
    # Settings as in the embedded mode, whatever this shell has: importing needs no database, and production
    # settings refuse to load without their e-mail backend and secrets.
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "LIMITER_URL"):
        os.environ.pop(name, None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("SECRET_KEY", "bytecode-warm-up-only")
    started = time.monotonic()
    import django

    django.setup()
    failed: list[str] = []
    names = [name for package in PACKAGES for name in modules_of(package)] + list(PRODUCTION) + list(LAZY)
    if mode == "dev":
        names += list(TEST_TOOLS)
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:  # a module that cannot be imported here only misses its warm-up
            failed.append(f"{name} ({type(exc).__name__})")
    print(f"==> bytecode of {len(sys.modules)} modules written: {time.monotonic() - started:.1f} s"
          + (f" (not imported: {', '.join(failed)})" if failed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "app"))
