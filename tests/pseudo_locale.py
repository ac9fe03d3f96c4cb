"""The pseudo-locale: a test-only language whose catalogue wraps every translation in markers, and the registry of
pages checked in it (``tests/test_languages.py``).

A page rendered in the pseudo-locale shows every string that went through gettext as ``⟦...⟧``; any other visible
text must be data (names, ids, numbers, dialogue and item texts from the database). An English literal left in a
template, or a Python string not wrapped in gettext, shows up outside the markers and fails the check.

**Adding a page** (when its template is converted): add a :class:`Page` to :data:`PAGES` with the URL name, the
role that opens it and the kinds of object its URL takes (kinds of the two-project world, ``tests/two_projects.py``,
always Alpha's). ``docs/tests.md`` lists what is covered; every page should be, in the end.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

OPEN, CLOSE = "⟦", "⟧"
#: The pseudo-locale's language code (Android's and Chromium's pseudo-locale for accents is en-XA).
CODE = "en-xa"


@dataclass(frozen=True)
class Page:
    """A page of the registry: ``name`` (URL name) as ``role`` ("anonymous", "coordinator", "analyst",
    "physician"), its URL's arguments as objects of Alpha (``project``, ``member`` or a kind of ``Side.objects``;
    ``kind.attribute`` for another field than the id, e.g. ``scale.slug``), and the status it answers with."""

    name: str
    role: str
    args: tuple[str, ...] = ()
    status: int = 200
    query: str = ""
    #: a URL of its own, for pages no URL name reaches (an unknown address: the 404 page)
    path: str = ""

    @property
    def id(self) -> str:
        return f"{self.role}:{self.path or self.name}"


#: Every page checked in the pseudo-locale, by role. Extend it as templates are converted.
PAGES: list[Page] = [
    # signing in and the account
    Page("login", "anonymous"),
    *(Page(name, role) for role in ("coordinator", "analyst", "physician")
      for name in ("project-list", "api-token-page", "password_change", "password_change_done")),
    # projects
    *(Page("project-detail", role, ("project",)) for role in ("coordinator", "analyst", "physician")),
    Page("project-member-remove", "coordinator", ("project", "member")),
    Page("project-member-remove", "physician", ("project", "member"), status=403),
    # corpora
    *(Page(name, role) for role in ("coordinator", "analyst") for name in ("corpus-list",)),
    Page("corpus-upload", "coordinator"),
    *(Page("corpus-detail", role, ("corpus",)) for role in ("coordinator", "analyst")),
    Page("privacy-review", "coordinator", ("corpus",)),
    # scales
    *(Page("scale-list", role) for role in ("coordinator", "analyst", "physician")),
    Page("scale-new", "coordinator"),
    *(Page("scale-detail", role, ("scale.slug",)) for role in ("coordinator", "analyst")),
    Page("scale-version", "physician", ("library_scale.slug", "library_version.number")),
    # label history
    Page("label-history", "coordinator", ("assignment",)),
    # agreement reports (the world's report is still being computed: the progress page)
    *(Page(name, role, ("campaign",)) for role in ("coordinator", "analyst")
      for name in ("campaign-report", "campaign-trial-report")),
    # preference studies (the world's is open: its results are sealed, 409)
    *(Page("preference-list", role) for role in ("coordinator", "analyst")),
    Page("preference-new", "coordinator"),
    # (the study page, "preference-detail", once the LLM run partials it shows -- causes, caps, spend -- are converted)
    *(Page("preference-results", role, ("preference_study",), status=409) for role in ("coordinator", "analyst")),
    Page("compare-task", "physician", ("preference_task",)),
    # the study archive
    *(Page(name, role) for role in ("coordinator", "analyst") for name in ("study-archive", "study-archive-methods")),
    # not found
    Page("", "coordinator", path="/no-such-page/", status=404),
]


def phrase_table() -> list[str]:
    """The words of the home-made phrase table (``annotation.ui_text``: the scale and rating pages' words in the
    scale language the reader picks there), which ``tests/test_rating_page_text.py`` checks in both languages: they
    count as translated until the table is folded into the catalogues. Placeholders split a phrase into its parts."""
    from annotation import ui_text

    parts = set()
    for table in (ui_text.PHRASES, ui_text.SCRIPT_PHRASES):
        for pair in table.values():
            for text in pair:
                parts.update(p.strip() for p in re.split(r"\{\w+\}", text) if len(p.strip()) > 1)
    return sorted(parts, key=len, reverse=True)


def pseudo(text: str) -> str:
    return f"{OPEN}{text}{CLOSE}"


def django_catalogues(language: str = "zh_Hans") -> list[Path]:
    """Django's own catalogues (its forms, validators and messages: the password change page's), which the site's
    languages get from Django: the pseudo-locale wraps them too."""
    import django

    root = Path(django.__file__).parent
    return sorted([*root.glob(f"conf/locale/{language}/LC_MESSAGES/django.po"),
                   *root.glob(f"contrib/*/locale/{language}/LC_MESSAGES/django.po")])


def write_catalogue(po_paths: list[Path], target: Path, locale: str) -> Path:
    """The pseudo-locale's catalogues (django and djangojs) under ``target``: every msgid of ``po_paths`` (any
    language's), each translation the English wrapped in markers. Returns the locale folder to put in
    LOCALE_PATHS."""
    import polib

    by_domain: dict[str, polib.POFile] = {}
    for path in po_paths:
        out = by_domain.setdefault(path.stem, polib.POFile())
        out.metadata = {"Content-Type": "text/plain; charset=UTF-8", "Language": locale,
                        "Plural-Forms": "nplurals=2; plural=(n != 1);"}
        for entry in polib.pofile(str(path)):
            if entry.obsolete:
                continue
            if entry.msgid_plural:
                new = polib.POEntry(msgctxt=entry.msgctxt, msgid=entry.msgid, msgid_plural=entry.msgid_plural,
                                    msgstr_plural={0: pseudo(entry.msgid), 1: pseudo(entry.msgid_plural)})
            else:
                new = polib.POEntry(msgctxt=entry.msgctxt, msgid=entry.msgid, msgstr=pseudo(entry.msgid))
            out.append(new)
    folder = target / locale / "LC_MESSAGES"
    folder.mkdir(parents=True, exist_ok=True)
    for domain, po in by_domain.items():
        (folder / f"{domain}.mo").write_bytes(po.to_binary())
    return target


#: Elements whose text is not prose to translate: code samples, the scripts' data, whatever says ``translate="no"``
#: (names of languages in their own language, product names), and what says ``data-source-language``: text in
#: English from the computation, not from the templates -- the methods and checklist that must equal the study
#: archive's files word for word, and the sentences a statistic writes about itself (why a kappa is undefined, a
#: report's notes); the element carries ``lang="en"`` where its text is shown.
SKIP = {"code", "pre", "kbd", "samp", "script", "style", "template",
        # a plot's own text (titles, axes, legend) is drawn by the computation, in English; the translated caption
        # names the plot and says where its values are
        "svg"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
ATTRIBUTES = ("aria-label", "placeholder", "title", "alt")


class _Text(HTMLParser):
    """The visible text of ``<main>`` in document order, and the translatable attributes' values."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth_main = 0
        self.skipping = 0
        self.parts: list[str] = []
        self.attributes: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "main":
            self.depth_main += 1
        if not self.depth_main:
            return
        if tag not in VOID and (self.skipping or tag in SKIP or attrs.get("translate") == "no"
                                or "data-source-language" in attrs):
            self.skipping += 1
        if self.skipping:
            return
        for name in ATTRIBUTES:
            if attrs.get(name):
                self.attributes.append(attrs[name])
        if tag == "input" and attrs.get("type") in {"submit", "button"} and attrs.get("value"):
            self.attributes.append(attrs["value"])
        if tag in {"br", "p", "li", "td", "th", "div", "section", "h1", "h2", "h3", "dt", "dd", "option", "tr"}:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if not self.depth_main:
            return
        if self.skipping:
            self.skipping -= 1
        if tag == "main":
            self.depth_main -= 1

    def handle_data(self, data):
        if self.depth_main and not self.skipping:
            self.parts.append(data)


def visible_text(page_html: str) -> tuple[str, list[str]]:
    parser = _Text()
    parser.feed(page_html)
    return "".join(parser.parts), parser.attributes


_INNERMOST = re.compile(re.escape(OPEN) + "[^" + OPEN + CLOSE + "]*" + re.escape(CLOSE))
#: What may stand outside the markers besides data: digits, punctuation, symbols and space, the product's name
#: and the names of standards and tools (written alike in every language).
_NEUTRAL = re.compile(r"^(?:[\W\d_]|\bv\d+\b)*$")
PROPER_NAMES = ("Mini-CEX Workbench", "Mini-CEX", "UTC", "HTTP", "JSON", "LLM", "SHA-256")


def outside_markers(text: str) -> tuple[str, bool]:
    """The text with every marked part removed (innermost first: a translation may hold a translated value), and
    whether the markers were balanced."""
    previous = None
    while previous != text:
        previous = text
        text = _INNERMOST.sub("\n", text)
    return text, OPEN not in text and CLOSE not in text


def untranslated(page_html: str, data: list[str]) -> list[str]:
    """The pieces of visible text outside the markers that are not data (``data``: the database's texts, longest
    first) nor neutral (numbers, punctuation, proper names)."""
    text, attributes = visible_text(page_html)
    problems = []
    for piece in [text, *attributes]:
        rest, balanced = outside_markers(html.unescape(piece))
        if not balanced:
            problems.append(f"unbalanced markers in {piece[:120]!r}")
            rest = rest.replace(OPEN, "\n").replace(CLOSE, "\n")
        for value in data:
            if value in rest:
                rest = re.sub(r"(?<!\w)" + re.escape(value) + r"(?!\w)", "\n", rest)
        for name in PROPER_NAMES:
            rest = rest.replace(name, " ")
        for line in rest.split("\n"):
            if line.strip() and not _NEUTRAL.match(line.strip()):
                problems.append(line.strip())
    return problems
