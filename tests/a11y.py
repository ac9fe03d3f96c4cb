"""Accessibility and touch checks shared by the browser tests: axe-core's WCAG 2.1 A/AA rules, a crawl of
every page a role can reach, and the geometry of touch targets (size, overlap, horizontal overflow).

The crawl starts from a role's home and follows same-origin links (``a[href]``) inside the app, leaving out logging
out, downloads (exports, files) and anything only a POST reaches (forms are not submitted). Pages of one URL pattern
differ only in their rows, so each pattern (its name and the names of its query parameters, with the language
switch's value) is checked once: the first link found.
"""

from __future__ import annotations

import json
import re
import weakref
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urldefrag, urlsplit

from playwright.sync_api import Error as PlaywrightError

from tests.conftest import ARTIFACTS

# axe-core's tags for WCAG 2.0 and 2.1, levels A and AA (the standard the README's accessibility statement names)
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
DOWNLOAD = re.compile(r"(/exports?/|/download/|\.(csv|xlsx|sav|json|jsonl|zip|pdf|png|svg|txt|ico)$)", re.I)
# the machine interface (JSON and its third-party explorer) and Django's own admin site are not the app's pages
OUTSIDE_APP = ("/api/", "/admin/", "/static/", "/healthz", "/accounts/logout/")
# query parameters whose value changes what a page is (not only which rows it lists)
MEANINGFUL = {"lang"}
MIN_TARGET = 44  # CSS px, WCAG 2.5.5 (target size, enhanced)
PHONE = {"width": 390, "height": 844}
TABLET_PORTRAIT = {"width": 768, "height": 1024}
TABLET_LANDSCAPE = {"width": 1024, "height": 768}
DESKTOP = {"width": 1366, "height": 900}


_AXE_CONTEXTS: weakref.WeakSet = weakref.WeakSet()  # browser contexts that add axe-core to every new document


def run_axe(page, options: dict) -> dict:
    """axe-core's results (``axe.run(document, options)``) on the page as it is now.

    axe-core (axe-playwright-python's copy, 570 KB) is added to the page's context once as an init script, so every
    page the context opens afterwards has it from its start, instead of being sent through the DevTools protocol
    and compiled again before each run (40 ms a page, 300-odd pages in the crawls). Init scripts, like
    ``page.evaluate``, run outside the page's Content-Security-Policy."""
    from axe_playwright_python.base import AXE_SCRIPT

    if page.context not in _AXE_CONTEXTS:
        page.context.add_init_script(script=AXE_SCRIPT)
        _AXE_CONTEXTS.add(page.context)
    if not page.evaluate("() => typeof window.axe === 'object'"):  # a document opened before the init script
        page.evaluate(AXE_SCRIPT)
    response = page.evaluate("options => axe.run(document, options)", options)
    assert response.get("testEngine", {}).get("name") == "axe-core", "axe-core did not run"
    return response


def axe(page, tags: list[str] | None = None, *, contrast: bool = True) -> list[dict]:
    """axe-core's violations on the page as it is now, with WCAG 2.1 A/AA rules only (or ``tags``); ``contrast=False``
    leaves out the colour contrast rule (most of axe's time on a page)."""
    options = {"runOnly": {"type": "tag", "values": tags or WCAG_TAGS}, "resultTypes": ["violations"]}
    if not contrast:
        options["rules"] = {"color-contrast": {"enabled": False}}
    return run_axe(page, options)["violations"]


def describe(violations: list[dict]) -> str:
    return "\n".join(f"  {v['id']} ({v['impact']}): {v['help']} -- " +
                     "; ".join(n["html"][:160] for n in v["nodes"][:4]) for v in violations)


def pattern_key(url: str) -> tuple:
    """What makes two links the same page for the crawl: the URL pattern's name and the query's parameter names
    (with the value of a MEANINGFUL one)."""
    from django.urls import Resolver404, resolve

    parts = urlsplit(url)
    try:
        match = resolve(parts.path)
        name = f"{match.namespace}:{match.url_name}" if match.namespace else match.url_name
    except Resolver404:
        name = parts.path
    query = tuple(sorted((k, v if k in MEANINGFUL else "") for k, v in parse_qsl(parts.query, keep_blank_values=True)))
    return name, query


def in_app(url: str, origin: str) -> bool:
    parts = urlsplit(url)
    if f"{parts.scheme}://{parts.netloc}" != origin:
        return False
    return not parts.path.startswith(OUTSIDE_APP) and not DOWNLOAD.search(parts.path)


@dataclass
class Crawl:
    """The pages one role reached and what axe found on them (URL -> violations)."""

    role: str
    visited: dict[tuple, str] = field(default_factory=dict)
    violations: dict[str, list[dict]] = field(default_factory=dict)

    def problems(self) -> str:
        return "\n".join(f"{self.role} {url}:\n{describe(found)}" for url, found in self.violations.items() if found)


def links(page) -> list[str]:
    """Absolute URLs of the page's links that a user can follow with GET (no download attribute)."""
    return page.evaluate("""() => Array.from(document.querySelectorAll('a[href]'))
        .filter(a => !a.hasAttribute('download') && !a.href.startsWith('javascript:'))
        .map(a => a.href)""")


def crawl(page, role: str, origin: str, seeds: list[str], *, width: str, limit: int = 400, check=None,
          within: str = "/", distinct: frozenset[str] = frozenset(), contrast: bool = True,
          checked_elsewhere: str | None = None, skip=None, checked: set | None = None) -> Crawl:
    """Visit every page pattern reachable from ``seeds`` by links (only paths starting with ``within``; every page
    of the URL patterns named in ``distinct``, whose pages differ in more than their rows); run axe (without its
    colour contrast rule if not ``contrast``), ``content_problems`` and ``check(page)`` (more problems, as strings)
    on each. A page that answers with an error is a problem too. Pages whose path starts with ``checked_elsewhere``
    (the manual, which a test of its own checks page by page at both widths) are visited for their answer and their
    links only. ``skip(path)`` true: a page not visited at all. ``checked``: the page patterns an earlier crawl at
    this width checked (as another role), visited for their answer and their links only; this crawl's are added."""
    result = Crawl(role=role)

    def key(url: str) -> tuple:
        name, query = pattern_key(url)
        return (name, urlsplit(url).path) if name in distinct else (name, query)

    queue = [origin + s if s.startswith("/") else s for s in seeds]
    while queue and len(result.visited) < limit:
        url = urldefrag(queue.pop(0)).url
        path = urlsplit(url).path
        if (key(url) in result.visited or not in_app(url, origin) or not path.startswith(within)
                or (skip is not None and skip(path))):
            continue
        result.visited[key(url)] = url
        try:
            response = page.goto(url)
        except PlaywrightError as error:
            if "Download is starting" in str(error):  # a file, not a page (a link the DOWNLOAD rule missed)
                continue
            raise
        page.wait_for_load_state("load")
        elsewhere = ((checked_elsewhere is not None and urlsplit(url).path.startswith(checked_elsewhere))
                     or (checked is not None and key(url) in checked))
        if checked is not None:
            checked.add(key(url))
        found = [] if elsewhere else axe(page, contrast=contrast)
        status = response.status if response else 0
        if status >= 400:
            found.append({"id": f"http-{status}", "impact": "critical", "help": "the page answered with an error",
                          "nodes": []})
        problems = [] if elsewhere else content_problems(page) + (check(page) if check is not None else [])
        found += [{"id": "content", "impact": "serious", "help": text, "nodes": []} for text in problems]
        result.violations[url] = found
        if found:
            ARTIFACTS.mkdir(exist_ok=True)
            name = re.sub(r"\W+", "-", urlsplit(url).path + "-" + urlsplit(url).query).strip("-")[:80]
            (ARTIFACTS / f"axe-{role}-{width}-{name or 'home'}.json").write_text(json.dumps(found, indent=2))
        queue += [link for link in links(page) if key(urldefrag(link).url) not in result.visited]
    return result


# Text in Chinese outside an element that says so (lang="zh..."; code excepted), and charts (SVG drawings of 48 px
# and more, not in a control) without a text alternative.
_CONTENT_CHECKS = r"""() => {
  const problems = [];
  const han = /[\u3400-\u9fff\uf900-\ufaff]/;
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const seen = new Set();
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    // program text (code) is not a part in a human language (WCAG 3.1.2)
    if (!parent || !han.test(node.textContent) || parent.closest("script, style, template, pre, code")) continue;
    const declared = parent.closest("[lang]");
    const lang = declared ? declared.getAttribute("lang").toLowerCase() : "";
    if (!lang.startsWith("zh") && !seen.has(parent)) {
      seen.add(parent);
      problems.push(`Chinese text without lang="zh" (lang="${lang}"): <${parent.tagName.toLowerCase()}> ` +
        node.textContent.trim().slice(0, 40));
    }
  }
  // a chart: a drawing of its own (an icon inside a link or a button, or a small one, is named by its control)
  for (const svg of document.querySelectorAll("svg")) {
    if (svg.closest("[aria-hidden=true]") || svg.parentElement.closest("svg, a, button, label, summary")) continue;
    const box = svg.getBoundingClientRect();
    if (!svg.checkVisibility() || box.width < 48 || box.height < 48) continue;
    const named = svg.getAttribute("aria-label") || svg.getAttribute("aria-labelledby") ||
      (svg.querySelector(":scope > title") || {}).textContent;
    if (svg.getAttribute("role") !== "img" || !named) {
      problems.push(`chart without a text alternative (role="img" and a name): ` +
        (svg.closest("figure, section") || svg).textContent.trim().slice(0, 60));
    }
  }
  return problems;
}"""


def content_problems(page) -> list[str]:
    """Chinese text outside lang="zh" and charts without a text alternative, on the page as it is now."""
    return page.evaluate(_CONTENT_CHECKS)


# The geometry of a page on a touch screen, as it is now (JavaScript run in the page; returns problems as strings):
# - nothing wider than the screen: no horizontal scrolling of the page, no element out of the screen unless a box
#   of its own scrolls it (a wide table), no text cut off by a box that hides what overflows;
# - every control (links, buttons, fields, summaries, answer labels) at least MIN_TARGET x MIN_TARGET CSS px;
# - no two controls overlapping, and each control, scrolled into view as focus or a tap brings it (to the bottom edge
#   of the screen, where a sticky bar sits), is the element under its centre: nothing covers it.
_GEOMETRY = r"""([min, controlsSelector]) => {
  const problems = [];
  const width = document.documentElement.clientWidth;
  const name = (el) => {
    const text = (el.getAttribute("aria-label") || el.textContent || el.value || "").trim().replace(/\s+/g, " ");
    return `<${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}${el.className && typeof el.className === "string"
      ? "." + el.className.trim().split(/\s+/).join(".") : ""}> "${text.slice(0, 40)}"`;
  };
  // rendered and not hidden on purpose (closed details, a closed dialog, a visually hidden label or a skip link
  // waiting off-screen for the focus)
  const shown = (el) => {
    if (!el.checkVisibility({ visibilityProperty: true, contentVisibilityAuto: true })) return false;
    const r = el.getBoundingClientRect();
    return r.width > 1 && r.height > 1 && r.right > 0 && !el.closest("dialog:not([open]), .visually-hidden");
  };
  const scroller = (el) => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o === "auto" || o === "scroll") return p;
    }
    return null;
  };
  if (document.documentElement.scrollWidth > window.innerWidth + 1) {
    problems.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} px wide in ${window.innerWidth}`);
  }
  for (const el of document.body.querySelectorAll("*")) {
    if (!shown(el) || el.closest(".skip-link")) continue;
    const r = el.getBoundingClientRect();
    if ((r.right > width + 1 || r.left < -1) && !scroller(el) && getComputedStyle(el).position !== "fixed") {
      problems.push(`wider than the screen (${Math.round(r.left)}..${Math.round(r.right)} of ${width}): ${name(el)}`);
    }
    const style = getComputedStyle(el);
    if (/(hidden|clip)/.test(style.overflowX + style.overflowY) && el.children.length + el.textContent.trim().length
        && (el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1)) {
      problems.push(`content cut off: ${name(el)}`);
    }
  }
  const controls = Array.from(document.querySelectorAll(controlsSelector)).filter((el) => {
    if (!shown(el)) return false;
    const r = el.getBoundingClientRect();
    // a radio shown through its label (1 px, transparent): the label is the control
    return !(el.matches("input") && (r.width <= 2 || getComputedStyle(el).opacity === "0"));
  });
  for (const el of controls) {
    const r = el.getBoundingClientRect();
    if (r.width < min - 0.5 || r.height < min - 0.5) {
      problems.push(`control smaller than ${min}x${min} (${r.width.toFixed(1)}x${r.height.toFixed(1)}): ${name(el)}`);
    }
    const scrolls = /(auto|scroll)/.test(getComputedStyle(el).overflowX);  // a box that scrolls its content
    if (!el.matches("textarea, select, input") && !scrolls && el.scrollWidth > el.clientWidth + 1) {
      problems.push(`text wider than its control (${el.scrollWidth} px in ${el.clientWidth}): ${name(el)}`);
    }
  }
  // a control in a sticky bar lies over whatever scrolls under it: that is the covering test's business, below
  const stuck = (el) => {
    for (let p = el; p && p !== document.body; p = p.parentElement) {
      if (/(sticky|fixed)/.test(getComputedStyle(p).position)) return p;
    }
    return null;
  };
  const boxes = controls.map((el) => [el, el.getBoundingClientRect()]);
  const linked = (a, b) => a.contains(b) || b.contains(a) || (a.labels && Array.from(a.labels).includes(b)) ||
    (b.labels && Array.from(b.labels).includes(a));
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const [a, ra] = boxes[i], [b, rb] = boxes[j];
      if (ra.left < rb.right - 0.5 && rb.left < ra.right - 0.5 && ra.top < rb.bottom - 0.5 && rb.top < ra.bottom - 0.5
          && !linked(a, b) && scroller(a) === scroller(b) && stuck(a) === stuck(b)) {
        problems.push(`controls overlap: ${name(a)} and ${name(b)}`);
      }
    }
  }
  const x0 = window.scrollX, y0 = window.scrollY;
  for (const el of controls) {
    el.scrollIntoView({ block: "end", inline: "nearest" });
    const r = el.getClientRects()[0] || el.getBoundingClientRect(); // a link over two lines: its first line
    const x = Math.min(Math.max(r.left + r.width / 2, 0), width - 1);
    const y = Math.min(Math.max(r.top + r.height / 2, 0), window.innerHeight - 1);
    const hit = document.elementFromPoint(x, y);
    const ok = hit && (el.contains(hit) || (el.labels && Array.from(el.labels).some((l) => l.contains(hit))));
    if (!ok) problems.push(`covered at its centre: ${name(el)} by ${hit ? name(hit) : "nothing"}`);
  }
  window.scrollTo(x0, y0);
  return problems;
}"""
CONTROLS = ("a[href], button, input:not([type=hidden]), select, textarea, summary, label.choice, .likert label, "
            "[tabindex='0']")


def geometry_problems(page, *, targets: bool = True) -> list[str]:
    """What a touch screen user would trip over on the page as it is now (see _GEOMETRY); ``targets=False`` leaves
    the target size out (a mouse and a keyboard: reflow and zoom)."""
    return page.evaluate(_GEOMETRY, [MIN_TARGET if targets else 0, CONTROLS])
