"""The manual behind the Help link: ``docs/`` built with MkDocs (``mkdocs.yml``) and served to signed-in users.

The site is built the first time it is asked for, and again once ``docs/`` or ``mkdocs.yml`` change, in a child
process (``python -m mkdocs build``) into ``var/help/<fingerprint of the sources>/``: a finished build appears by one
rename, and a file lock makes several web processes build it once. The Material theme puts a few small inline
scripts in every page, which the app's Content-Security-Policy forbids; each page is therefore served with the
SHA-256 hashes of exactly its own inline scripts (taken from the built HTML) added to ``script-src``, and nothing
else of the policy changes. The search (an index file and a web worker of the site) and the fonts (the system's:
``font: false``) need nothing from another site.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import functools
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import SuspiciousFileOperation
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils import translation
from django.utils._os import safe_join
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET
from django.views.static import serve

logger = logging.getLogger(__name__)

CONFIG = Path(settings.BASE_DIR) / "mkdocs.yml"
SOURCES = Path(settings.BASE_DIR) / "docs"
THEME = "mkdocs_overrides"  # the theme's own templates (custom_dir), beside mkdocs.yml
HASHES = "csp-script-hashes.json"  # written last: a site folder holding it is complete
BUILD_SECONDS = 300
#: The page languages whose manual pages exist in translation (``page.zh.md`` beside ``page.md``, built by
#: mkdocs-static-i18n under ``zh/``), by the folder of the built site.
MANUAL_FOLDERS = {"zh-hans": "zh"}
INLINE_SCRIPT = re.compile(r"<script(?P<attrs>[^>]*)>(?P<body>.*?)</script>", re.S | re.I)


class ManualUnavailable(RuntimeError):
    """The manual could not be built (the message says why)."""


def manual_url(page: str = "", language: str | None = None) -> str:
    """The address of a manual page (``""`` the home, ``"users/physicians/"``) in ``language`` (the page's language
    when not given) where the manual has that page in it, else in English."""
    base = reverse("help")
    folder = MANUAL_FOLDERS.get(language or translation.get_language() or "")
    if folder:
        stem = page.strip("/") or "index"
        if (SOURCES / f"{stem}.{folder}.md").is_file() or (SOURCES / stem / f"index.{folder}.md").is_file():
            return f"{base}{folder}/{page}"
    return base + page


def help_link(request) -> dict:
    """Context processor: the Help link of every page opens the manual in the reader's language (one stat call)."""
    return {"help_url": manual_url()}


@functools.cache
def _builder_versions() -> str:
    try:
        return (f"mkdocs {version('mkdocs')}, mkdocs-material {version('mkdocs-material')}, "
                f"mkdocs-static-i18n {version('mkdocs-static-i18n')}")
    except PackageNotFoundError:
        return "mkdocs missing"


def fingerprint() -> str:
    """Names the sources' state: every file of docs/, mkdocs_overrides/ and mkdocs.yml by path, size and modification
    time, and the builder's versions. A few dozen stat calls, so it is taken on every request."""
    digest = hashlib.sha256(_builder_versions().encode())
    files = sorted(p for folder in (SOURCES, CONFIG.parent / THEME) for p in folder.rglob("*") if p.is_file())
    for path in [CONFIG, *files]:
        stat = path.stat()
        digest.update(f"{path.relative_to(CONFIG.parent)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def inline_script_hashes(html: str) -> list[str]:
    """CSP sources (``'sha256-...'``) for the inline scripts of a page; data blocks (JSON) are never run."""
    hashes = []
    for match in INLINE_SCRIPT.finditer(html):
        attrs = match.group("attrs").lower()
        if "src=" in attrs or "application/json" in attrs:
            continue
        digest = hashlib.sha256(match.group("body").encode()).digest()
        hashes.append(f"'sha256-{base64.b64encode(digest).decode()}'")
    return sorted(set(hashes))


def build(site: Path) -> None:
    """Build the manual into ``site`` (absent), all or nothing."""
    staging = Path(tempfile.mkdtemp(prefix=".build-", dir=site.parent))
    try:
        command = [sys.executable, "-m", "mkdocs", "build", "--quiet", "--config-file", str(CONFIG),
                   "--site-dir", str(staging)]
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's notice about MkDocs 2 is not an error
        try:
            done = subprocess.run(command, cwd=CONFIG.parent, env=env, capture_output=True, text=True,
                                  timeout=BUILD_SECONDS)
        except subprocess.TimeoutExpired as exc:
            raise ManualUnavailable(f"mkdocs build took more than {BUILD_SECONDS} s") from exc
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise ManualUnavailable("mkdocs build failed: " + " / ".join(tail))
        hashes = {str(page.relative_to(staging)): inline_script_hashes(page.read_text(encoding="utf-8"))
                  for page in staging.rglob("*.html")}
        (staging / HASHES).write_text(json.dumps(hashes))
        staging.rename(site)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def built_site() -> Path:
    """The folder of the manual for the current sources, built first when missing (older builds are removed)."""
    root = Path(settings.VAR_DIR) / "help"
    site = root / fingerprint()
    if (site / HASHES).is_file():
        return site
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building the same sources
        if not (site / HASHES).is_file():
            shutil.rmtree(site, ignore_errors=True)
            build(site)
            for old in root.iterdir():
                if old.is_dir() and old != site and not old.name.startswith("."):
                    shutil.rmtree(old, ignore_errors=True)
    return site


@functools.lru_cache(maxsize=8)
def _hashes(site: Path) -> dict[str, list[str]]:
    return json.loads((site / HASHES).read_text())


@login_required
@require_GET
def manual(request, path: str = ""):
    """A page or file of the manual; a folder answers with its index.html, as MkDocs' links expect."""
    try:
        site = built_site()
    except (ManualUnavailable, OSError) as exc:
        logger.error("The manual could not be built: %s", exc)
        return HttpResponse(_("The manual could not be built on this server; the administrators will find why in "
                              "the server log. Its pages are the Markdown files in the docs/ folder of the source."),
                            status=503, content_type="text/plain; charset=utf-8")
    try:
        target = Path(safe_join(site, path))
    except (SuspiciousFileOperation, ValueError) as exc:  # outside the site, or a NUL character
        raise Http404("No such page in the manual.") from exc
    if target.is_dir():
        if path and not path.endswith("/"):
            return HttpResponseRedirect(request.path + "/")
        path = f"{path}index.html"
    if path == HASHES:
        raise Http404("No such page in the manual.")
    response = serve(request, path, document_root=site)
    if path.endswith(".html"):
        with contextlib.suppress(KeyError):
            response._csp_update = {"script-src": _hashes(site)[path]}
    return response
