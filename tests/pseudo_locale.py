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
    ``kind.attribute`` for another field than the id, e.g. ``scale.slug``; ``panel_token``: the personal link of
    Alpha's panelist), and the status it answers with."""

    name: str
    role: str
    args: tuple[str, ...] = ()
    status: int = 200
    query: str = ""
    #: a URL of its own, for pages no URL name reaches (an unknown address: the 404 page; a broken panel link)
    path: str = ""

    @property
    def id(self) -> str:
        return f"{self.role}:{self.path or self.name}"


#: Every page checked in the pseudo-locale, by role. Extend it as templates are converted.
PAGES: list[Page] = [
    # signing in and the account
    Page("login", "anonymous"),
    # the home page (with the top bar, menus, account menu and footer every page shares)
    *(Page("home", role) for role in ("coordinator", "analyst", "physician")),
    *(Page(name, role) for role in ("coordinator", "analyst", "physician")
      for name in ("project-list", "api-token-page", "password_change", "password_change_done")),
    # projects
    *(Page("project-detail", role, ("project",)) for role in ("coordinator", "analyst", "physician")),
    Page("project-member-remove", "coordinator", ("project", "member")),
    Page("project-member-remove", "physician", ("project", "member"), status=403),
    Page("invitation", "anonymous"),  # no link opened: the page that says the link no longer works
    Page("invitation", "coordinator"),
    # corpora
    *(Page(name, role) for role in ("coordinator", "analyst") for name in ("corpus-list",)),
    Page("corpus-upload", "coordinator"),
    *(Page("corpus-detail", role, ("corpus",)) for role in ("coordinator", "analyst")),
    Page("privacy-review", "coordinator", ("corpus",)),
    # scales
    *(Page("scale-list", role) for role in ("coordinator", "analyst", "physician")),
    Page("scale-new", "coordinator"),
    *(Page("scale-detail", role, ("scale.slug",)) for role in ("coordinator", "analyst", "physician")),
    *(Page("scale-version", role, ("scale.slug", "=1")) for role in ("coordinator", "analyst")),
    Page("scale-version", "physician", ("library_scale.slug", "library_version.number")),
    # label history
    Page("label-history", "coordinator", ("assignment",)),
    # Delphi: the coordinator's and analyst's pages, the panelist's questionnaire (their personal link, no account)
    *(Page(name, role) for role in ("coordinator", "analyst") for name in ("delphi:list",)),
    Page("delphi:study-new", "coordinator"),
    *(Page("delphi:study", role, ("delphi_study",)) for role in ("coordinator", "analyst")),
    Page("delphi:study-links", "coordinator", ("delphi_study",)),
    *(Page("delphi:round", role, ("round",)) for role in ("coordinator", "analyst")),
    *(Page("delphi:round-validation", role, ("round",)) for role in ("coordinator", "analyst")),
    *(Page("delphi:mine", role) for role in ("coordinator", "analyst", "physician")),
    # (the items in English in both languages: the numbers check compares the page's own numbers, not the items')
    Page("delphi:panel-home", "anonymous", ("panel_token",), query="?lang=en"),
    Page("", "anonymous", path="/delphi/p/not-a-link/", status=403),
    # campaigns and the rating path
    *(Page("campaign-list", role) for role in ("coordinator", "analyst")),
    Page("campaign-new", "coordinator"),
    Page("campaign-dialogue", "coordinator", ("campaign", "dialogue")),
    *(Page("dialogue-detail", role, ("dialogue",)) for role in ("coordinator", "analyst")),
    Page("dialogue-detail", "coordinator", ("redaction.dialogue_id",)),
    # (the items in English in every language: the numbers test compares the page's own numbers, and the item
    # texts' numbers differ between their languages)
    Page("rate", "physician", ("open_assignment",), query="?lang=en"),
    Page("rate", "physician", ("assignment",), query="?lang=en"),  # submitted: closed to changes
    *(Page("rate-next", role) for role in ("coordinator", "analyst")),  # nothing left to rate (no assignment)
    *(Page("campaign-detail", role, ("campaign",)) for role in ("coordinator", "analyst")),
    Page("campaign-active-sample", "coordinator", ("campaign",)),
    # LLM judges: the list, a judge's form, starting a run, a run (finished; imported), its report against the
    # campaign (computing: the world's report job is queued), the mode comparison, a jury, its report and
    # comparison, the judge selection, the system page
    *(Page(name, role) for role in ("coordinator", "analyst") for name in ("judge-list",)),
    Page("judge-new", "coordinator"),
    Page("judge-edit", "coordinator", ("judge_config",)),
    Page("judge-run-new", "coordinator"),
    *(Page("judge-run", role, (kind,)) for role in ("coordinator", "analyst")
      for kind in ("judge_run", "imported_run")),
    *(Page("judge-run-report", role, ("judge_run",), query="?campaign={campaign}")
      for role in ("coordinator", "analyst")),
    *(Page("judge-run-compare", role, ("judge_run", "imported_run"), query="?campaign={campaign}")
      for role in ("coordinator", "analyst")),
    *(Page("jury-detail", role, ("jury",)) for role in ("coordinator", "analyst")),
    *(Page("jury-report", role, ("jury",), query="?campaign={campaign}") for role in ("coordinator", "analyst")),
    *(Page("jury-compare", role, ("jury", "judge_run"), query="?campaign={campaign}")
      for role in ("coordinator", "analyst")),
    *(Page("judge-selection", role, query=query) for role in ("coordinator", "analyst")
      for query in ("", "?campaign={campaign}")),
    Page("system", "coordinator"),
    # dialogue generation: its home page, importing cases, a case set, starting a job, a job and a dialogue it made
    *(Page("generation-home", role) for role in ("coordinator", "analyst")),
    Page("generation-case-import", "coordinator"),
    Page("generation-job-new", "coordinator"),
    *(Page("generation-case-set", role, ("case_set",)) for role in ("coordinator", "analyst")),
    *(Page("generation-job", role, ("generation_job",)) for role in ("coordinator", "analyst")),
    *(Page("generation-dialogue", role, ("generated_dialogue",)) for role in ("coordinator", "analyst")),
    # agreement reports (the world's report is still being computed: the progress page)
    *(Page(name, role, ("campaign",)) for role in ("coordinator", "analyst")
      for name in ("campaign-report", "campaign-trial-report")),
    # preference studies (the world's is open: its results are sealed, 409)
    *(Page("preference-list", role) for role in ("coordinator", "analyst")),
    Page("preference-new", "coordinator"),
    *(Page("preference-detail", role, ("preference_study",)) for role in ("coordinator", "analyst")),
    *(Page("preference-results", role, ("preference_study",), status=409) for role in ("coordinator", "analyst")),
    Page("compare-task", "physician", ("preference_task",)),
    *(Page("compare-next", role) for role in ("coordinator", "analyst")),  # nothing left to compare
    # the study archive
    *(Page(name, role) for role in ("coordinator", "analyst") for name in ("study-archive", "study-archive-methods")),
    # not found
    Page("", "coordinator", path="/no-such-page/", status=404),
]


def pseudo(text: str) -> str:
    return f"{OPEN}{text}{CLOSE}"


def django_catalogues() -> list[Path]:
    """Django's own catalogues (its forms, validators, messages and admin) and Django REST framework's, which the
    site's languages get from them: the pseudo-locale wraps them too. Django's English catalogues list every string
    it translates (its Chinese one lacks its newest, e.g. the admin's hidden table headers); REST framework ships
    compiled catalogues only."""
    import django
    import rest_framework

    root = Path(django.__file__).parent
    return sorted([*root.glob("conf/locale/en/LC_MESSAGES/django.po"),
                   *root.glob("contrib/*/locale/en/LC_MESSAGES/django.po"),
                   *Path(rest_framework.__file__).parent.glob("locale/zh_Hans/LC_MESSAGES/django.mo")])


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
        for entry in (polib.mofile if path.suffix == ".mo" else polib.pofile)(str(path)):
            if entry.obsolete or not entry.msgid:
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
#: English from the computation, not from the templates -- a stored report's sentences written before their message
#: ids were stored, the references as published, and a sentence about a figure that no registry knows (the
#: statistics' warnings, core/stats/messages.py, and the reports' own, scoring/reports/sentences.py, are said in the
#: page's language); the element carries ``lang="en"`` where its text is shown. The methods page's sentences and
#: checklist are not exempt: the page says them in its language (the archive's files stay English).
SKIP = {"code", "pre", "kbd", "samp", "script", "style", "template"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
ATTRIBUTES = ("aria-label", "placeholder", "title", "alt")


class _Text(HTMLParser):
    """The visible text of the page (its ``<body>``: the top bar, menus and footer too, and the ``<title>``) in
    document order, and the translatable attributes' values."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth_body = 0
        self.in_title = False
        self.skipping = 0
        self.parts: list[str] = []
        self.attributes: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "body":
            self.depth_body += 1
        if tag == "title":
            self.in_title = True
            self.parts.append("\n")
        if not self.depth_body:
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
        if tag in BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag == "title":
            self.in_title = False
            self.parts.append("\n")
        if not self.depth_body:
            return
        if self.skipping:
            self.skipping -= 1
        if tag == "body":
            self.depth_body -= 1

    def handle_data(self, data):
        if self.in_title or (self.depth_body and not self.skipping):
            self.parts.append(data)


#: Elements whose text stands apart from its neighbours' (a line of its own in the visible text).
BLOCKS = {"br", "p", "li", "td", "th", "div", "section", "h1", "h2", "h3", "dt", "dd", "option", "tr", "header", "nav",
          "footer", "main", "summary", "label", "button", "form", "details"}


def visible_text(page_html: str) -> tuple[str, list[str]]:
    parser = _Text()
    parser.feed(page_html)
    return "".join(parser.parts), parser.attributes


_INNERMOST = re.compile(re.escape(OPEN) + "[^" + OPEN + CLOSE + "]*" + re.escape(CLOSE))
#: What may stand outside the markers besides data: digits, punctuation, symbols and space, the product's name
#: and the names of standards and tools (written alike in every language).
_NEUTRAL = re.compile(r"^(?:[\W\d_]|\bv\d+\b)*$")
PROPER_NAMES = ("Mini-CEX Workbench", "Mini-CEX", "UTC", "HTTP", "JSON", "LLM", "XLSX", "CSV", "SPSS", "KMO",
                "SHA-256")
#: Statistical symbols written alike in every language (the Delphi authority coefficients, counts, quartiles),
#: removed only as whole words.
SYMBOLS = ("Ca", "Cs", "Cr", "n", "Q1", "Q3", "W", "df", "p")


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
        for symbol in SYMBOLS:
            rest = re.sub(r"(?<!\w)" + symbol + r"(?!\w)", " ", rest)
        for line in rest.split("\n"):
            if line.strip() and not _NEUTRAL.match(line.strip()):
                problems.append(line.strip())
    return problems
