"""The manual (docs/, MkDocs) builds with ``--strict`` on a fresh clone with nothing set; every
internal link, anchor, script, stylesheet and image of the built HTML resolves; nothing is loaded from another site
(the manual works offline: system fonts, a local search index); the Markdown keeps to 120 characters a line; and
the README's two commands and demo logins are the real ones."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

BASE = Path(__file__).resolve().parent.parent
MARKDOWN = [BASE / "README.md", *sorted((BASE / "docs").rglob("*.md"))]
# Elements whose attribute makes the browser fetch something (an <a href> is only a link).
LOADS = {("script", "src"), ("img", "src"), ("source", "src"), ("iframe", "src"), ("video", "src"),
         ("audio", "src"), ("embed", "src"), ("object", "data")}
LINK_RELS_THAT_LOAD = {"stylesheet", "icon", "preload", "modulepreload", "manifest", "prefetch", "apple-touch-icon"}


class _Page(HTMLParser):
    """The anchors (id and name attributes) a page offers and the references it makes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.anchors: set[str] = set()
        self.references: list[tuple[str, str, str, bool]] = []  # tag, attribute, value, whether it loads

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        for name in ("id", "name"):
            if values.get(name) and not (tag == "meta" and name == "name"):
                self.anchors.add(values[name])
        for name in ("href", "src", "data"):
            if name in values:
                rels = set(values.get("rel", "").lower().split())
                loads = (tag, name) in LOADS or (tag == "link" and bool(rels & LINK_RELS_THAT_LOAD))
                self.references.append((tag, name, values[name], loads))


def check_site(site: Path) -> list[str]:
    """Every problem of a built site: a reference to a missing file, a link to a missing anchor, anything loaded
    from another site (HTML and CSS)."""
    pages: dict[Path, _Page] = {}
    for path in sorted(site.rglob("*.html")):
        if path == site / "404.html":  # MkDocs' page for a server root; the app answers with its own 404
            continue
        parser = _Page()
        parser.feed(path.read_text(encoding="utf-8"))
        pages[path] = parser
    problems = []
    for path, page in pages.items():
        where = path.relative_to(site)
        for tag, attribute, value, loads in page.references:
            url = urlsplit(value)
            if url.scheme or url.netloc:  # http:, https:, mailto:, data:, //host
                if loads and url.scheme != "data":
                    problems.append(f"{where}: <{tag} {attribute}> loads {value} from another site")
                continue
            target = (path.parent / unquote(url.path)).resolve() if url.path else path
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file() or site.resolve() not in target.parents:
                problems.append(f"{where}: <{tag} {attribute}={value!r}> points at a missing file")
                continue
            fragment = unquote(url.fragment)
            if fragment and target.suffix == ".html" and fragment not in pages[target].anchors:
                problems.append(f"{where}: <{tag} {attribute}={value!r}> points at a missing anchor")
    for css in site.rglob("*.css"):
        text = css.read_text(encoding="utf-8")
        for reference in re.findall(r"""url\(\s*['"]?([^'")]+)|@import\s+['"]([^'"]+)""", text):
            value = next(filter(None, reference))
            if re.match(r"(https?:)?//", value):
                problems.append(f"{css.relative_to(site)}: loads {value} from another site")
    return problems


def build(site: Path, config: Path = BASE / "mkdocs.yml") -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], cwd=config.parent, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("manual") / "site"
    done = build(site)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    return site


def test_the_manual_builds_strictly_with_every_link_and_anchor_resolving(site):
    assert (site / "index.html").is_file()
    assert check_site(site) == []


def test_the_manual_has_a_page_per_audience_and_a_local_search_index(site):
    for page in ("getting-started", "users/physicians", "users/coordinators", "users/analysts", "statistics",
                 "operations", "operations/configuration", "operations/security", "api", "architecture",
                 "benchmarks", "tests"):
        assert (site / page / "index.html").is_file(), page
    index = json.loads((site / "search" / "search_index.json").read_text())
    locations = {doc["location"] for doc in index["docs"]}
    assert "statistics/#references" in locations
    assert any("Krippendorff" in doc["text"] for doc in index["docs"])
    # the search runs in a web worker of the site itself
    assert list((site / "assets" / "javascripts" / "workers").glob("search.*.js"))


def test_the_manual_has_chinese_pages_for_physicians_and_delphi_panels(site):
    """getting-started, the physicians' and the Delphi page in Simplified Chinese under zh/ (mkdocs-static-i18n),
    with the theme's words in Chinese and a switch back to the English page; any other page shows its English
    under zh/, marked lang="en" below a note in Chinese."""
    for page in ("", "getting-started/", "users/physicians/", "users/delphi/"):
        text = (site / "zh" / page / "index.html").read_text(encoding="utf-8")
        assert '<html lang="zh"' in text and "本页尚无中文版" not in text, page
        assert 'hreflang="en"' in text, page
    assert "为对话评分" in (site / "zh" / "users" / "physicians" / "index.html").read_text(encoding="utf-8")
    assert "权威系数" in (site / "zh" / "users" / "delphi" / "index.html").read_text(encoding="utf-8")
    english = (site / "zh" / "statistics" / "index.html").read_text(encoding="utf-8")
    assert "本页尚无中文版" in english and '<div lang="en">' in english
    assert 'hreflang="zh"' in (site / "users" / "physicians" / "index.html").read_text(encoding="utf-8")


def test_the_manual_holds_no_inline_style(site):
    """The app serves the manual under its Content-Security-Policy, whose style-src allows only the site's own files
    (config/manual.py adds hashes for inline scripts, not styles): a column aligned in Markdown (``---:``) or HTML
    with a style attribute would be refused by the browser."""
    problems = [f"{path.relative_to(site)}: {match.group(0)}" for path in sorted(site.rglob("*.html"))
                for match in re.finditer(r"<style\b|\sstyle=\"[^\"]*\"", path.read_text(encoding="utf-8"))]
    assert problems == []


def test_the_architecture_page_holds_projects_and_scoping(site):
    page = (site / "architecture" / "index.html").read_text()
    assert 'id="projects-and-scoping"' in page
    assert "What a project owns" in page and "Roles per project" in page


def test_the_link_check_finds_broken_links_anchors_and_outside_loads(tmp_path):
    (tmp_path / "guide").mkdir()
    (tmp_path / "guide" / "index.html").write_text('<h2 id="here">Here</h2>')
    (tmp_path / "style.css").write_text("@import 'https://fonts.example.org/x.css'; a { background: url(ok.png) }")
    (tmp_path / "ok.png").write_bytes(b"")
    (tmp_path / "index.html").write_text(
        '<a href="guide/#here">fine</a> <a href="guide/#gone">anchor</a> <a href="missing/">page</a>'
        '<a href="https://example.org/">a link out is fine</a> <img src="ok.png">'
        '<script src="https://cdn.example.org/lib.js"></script>'
        '<link rel="stylesheet" href="//fonts.example.org/font.css">')
    problems = check_site(tmp_path)
    assert len(problems) == 5, problems
    assert any("#gone" in p and "missing anchor" in p for p in problems)
    assert any("missing/" in p and "missing file" in p for p in problems)
    assert sum("from another site" in p for p in problems) == 3


def test_a_broken_relative_link_fails_the_strict_build(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n\nSee [nowhere](nowhere.md) and [here](#gone).\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text((BASE / "mkdocs.yml").read_text().split("\nnav:")[0] + "\n")
    shutil.copytree(BASE / "mkdocs_overrides", tmp_path / "mkdocs_overrides")  # the theme's custom_dir
    done = build(tmp_path / "site", config)
    assert done.returncode != 0
    assert "nowhere.md" in done.stdout + done.stderr


@pytest.mark.parametrize("path", MARKDOWN, ids=[str(p.relative_to(BASE)) for p in MARKDOWN])
def test_no_markdown_line_is_longer_than_120_characters(path):
    long = [n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if len(line) > 120]
    assert long == [], f"{path.relative_to(BASE)}: lines {long} are longer than 120 characters"


def test_the_readme_is_a_door_with_the_two_commands_and_the_real_demo_logins():
    from annotation.demo import DEMO_USERS

    readme = (BASE / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 180  # 170 before the Languages section
    assert re.search(r"^make run\s+#", readme, re.M) and re.search(r"^make test\s+#", readme, re.M)
    makefile = (BASE / "Makefile").read_text()
    assert re.search(r"^run:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    demo = {(role, username, password) for role, username, password, _ in DEMO_USERS}
    for page in (readme, (BASE / "docs" / "getting-started.md").read_text(encoding="utf-8")):
        rows = set(re.findall(r"^\| (\w+) \| `([^`]+)` \| `([^`]+)` \|$", page, re.M))
        assert rows == demo
    # the Chinese page's table names the roles in Chinese, with the same logins
    chinese = (BASE / "docs" / "getting-started.zh.md").read_text(encoding="utf-8")
    assert set(re.findall(r"^\| \w+ \| `([^`]+)` \| `([^`]+)` \|$", chinese, re.M)) == {row[1:] for row in demo}
    # every page of the manual is linked from the README's map (a translation, page.zh.md, through its page)
    for page in (BASE / "docs").rglob("*.md"):
        if page.suffixes[-2:] == [".zh", ".md"]:
            assert page.with_name(page.name.replace(".zh.md", ".md")).exists(), page
        elif page.name != "index.md" or page.parent.name == "operations":
            assert f"docs/{page.relative_to(BASE / 'docs')}" in readme, page
