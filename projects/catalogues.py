"""The translation catalogues' upkeep, shared by ``manage.py catalogues`` and the tests.

Where the strings live, as Django's contrib apps keep theirs: each app's Python strings in ``<app>/locale/``, the
site's templates (``templates/``), ``config/`` and the JavaScript (``static/js``, domain ``djangojs``) in ``locale/``
(``settings.LOCALE_PATHS``). Extraction is Django's ``makemessages`` (it runs GNU gettext's ``xgettext`` and
``msgmerge``); compiling is done with polib, so the committed ``.mo`` files are exactly what the ``.po`` files
compile to and an install needs no GNU gettext."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.test.utils import override_settings
from django.utils.translation import to_locale

#: What makemessages reads, relative to the repository: the apps, the site's templates and scripts.
SOURCES = ("config", "projects", "core", "annotation", "scoring", "delphi", "studies", "templates", "static/js")
#: Never read: migrations (no page shows them), vendored scripts, and what is not the app (tests, var/ ...).
IGNORE = ["*/migrations/*", "static/vendor", "__pycache__", "var", "tests", "bench", "docs", "scripts", "site",
          "test-artifacts", "node_modules"]
DOMAINS = {"django": ["html", "txt", "py"], "djangojs": ["js"]}


def root() -> Path:
    return Path(settings.BASE_DIR)


def languages() -> list[str]:
    """The catalogues' languages: every language of the site but English, the language of the source strings."""
    return [code for code, _ in settings.LANGUAGES if code != "en"]


def po_files(base: Path | None = None) -> list[Path]:
    base = base or root()
    return sorted(p for source in SOURCES + ("locale",) for p in (base / source).glob("**/LC_MESSAGES/*.po")
                  if "vendor" not in p.parts)


def has_gettext() -> bool:
    return all(shutil.which(tool) for tool in ("xgettext", "msgmerge", "msguniq", "msgattrib"))


@contextlib.contextmanager
def _in(directory: Path):
    before = os.getcwd()
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(before)


def extract(base: Path, locales: list[str] | None = None, verbosity: int = 0) -> None:
    """Run makemessages over the sources under ``base`` for ``locales`` (default: every language but English)."""
    locales = [to_locale(code) for code in (locales or languages())]
    with _in(base), override_settings(LOCALE_PATHS=[base / "locale"]):
        for domain, extensions in DOMAINS.items():
            call_command("makemessages", locale=locales, domain=domain, extensions=extensions, ignore_patterns=IGNORE,
                         add_location="file", no_obsolete=True, verbosity=verbosity)


def fix_headers(base: Path | None = None) -> None:
    """makemessages leaves the template's header placeholders: name the language and its plural rule."""
    import polib

    for path in po_files(base):
        po = polib.pofile(str(path))
        locale = path.parent.parent.name
        po.metadata.update({"Language": locale, "Content-Type": "text/plain; charset=UTF-8",
                            "Project-Id-Version": "Mini-CEX Workbench", "Report-Msgid-Bugs-To": "",
                            "Last-Translator": "", "Language-Team": ""})
        if locale.startswith("zh"):
            po.metadata["Plural-Forms"] = "nplurals=1; plural=0;"
        po.metadata.pop("POT-Creation-Date", None)
        po.metadata.pop("PO-Revision-Date", None)
        po.header = "Translations of the Mini-CEX Workbench (docs/translators.md)."
        po.metadata_is_fuzzy = False
        po.save()


def compile_all(base: Path | None = None) -> list[Path]:
    """Compile every catalogue with polib (what the tests compare the committed .mo files with)."""
    import polib

    written = []
    for path in po_files(base):
        mo = path.with_suffix(".mo")
        mo.write_bytes(polib.pofile(str(path)).to_binary())
        written.append(mo)
    return written


def _copy_sources(target: Path) -> None:
    for source in SOURCES:
        shutil.copytree(root() / source, target / source,
                        ignore=shutil.ignore_patterns("__pycache__", "*.po", "*.mo", "vendor", "migrations"))
    (target / "locale").mkdir(exist_ok=True)


def _keys(path: Path) -> set[tuple[str, str, str]]:
    import polib

    return {(e.msgctxt or "", e.msgid, e.msgid_plural or "") for e in polib.pofile(str(path)) if not e.obsolete}


def out_of_date() -> dict[str, dict[str, list]]:
    """What makemessages would change: per catalogue, the strings it would add and those it would drop.
    Extracts a fresh copy of the sources in a temporary folder; the committed catalogues are left alone."""
    problems: dict[str, dict[str, list]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        _copy_sources(base)
        extract(base)
        fresh = {p.relative_to(base): p for p in po_files(base)}
        committed = {p.relative_to(root()): p for p in po_files()}
        for name in sorted(set(fresh) | set(committed), key=str):
            new = _keys(fresh[name]) if name in fresh else set()
            old = _keys(committed[name]) if name in committed else set()
            if new != old:
                problems[str(name)] = {"missing": sorted(new - old), "obsolete": sorted(old - new)}
    return problems
