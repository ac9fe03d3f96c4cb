"""The Help link of every page opens the manual, built from docs/ by the app on first use and
served to signed-in users under the app's Content-Security-Policy (its inline scripts allowed by hash only); the
search index answers, and in Chromium the search finds pages with nothing loaded from another site."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

import pytest

from config import manual
from tests.conftest import ARTIFACTS

BASE = Path(__file__).resolve().parent.parent


def inline_scripts(html: str) -> list[str]:
    return [body for attrs, body in re.findall(r"<script([^>]*)>(.*?)</script>", html, re.S)
            if "src=" not in attrs and "application/json" not in attrs]


def sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_help_asks_for_a_login(client, db):
    response = client.get("/help/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_the_help_link_opens_the_manual_under_the_content_security_policy(client, physician):
    client.force_login(physician)
    home = client.get("/")
    assert 'href="/help/">Help</a>' in home.content.decode()

    response = client.get("/help/")
    assert response.status_code == 200
    page = b"".join(response.streaming_content).decode()
    assert "<title>Mini-CEX Workbench</title>" in page
    assert 'href="getting-started/"' in page and 'href="statistics/"' in page
    policy = response["Content-Security-Policy"]
    script_src = re.search(r"script-src ([^;]+)", policy).group(1).split()
    scripts = inline_scripts(page)
    assert scripts, "the theme's inline scripts"
    # exactly 'self' and the hashes of this page's own inline scripts; no 'unsafe-inline'
    assert set(script_src) == {"'self'", *map(sha256, scripts)}
    assert "unsafe" not in policy
    assert re.search(r"style-src 'self'(;|$)", policy)

    statistics = client.get("/help/statistics/")
    assert statistics.status_code == 200
    text = b"".join(statistics.streaming_content).decode()
    assert 'id="references"' in text
    directive = re.search(r"script-src ([^;]+)", statistics["Content-Security-Policy"]).group(1)
    assert set(directive.split()) == {"'self'", *map(sha256, inline_scripts(text))}


def test_the_search_index_and_the_pages_assets_are_served(client, physician):
    client.force_login(physician)
    index = client.get("/help/search/search_index.json")
    assert index.status_code == 200
    docs = json.loads(b"".join(index.streaming_content))["docs"]
    assert any(doc["location"].startswith("users/physicians/") for doc in docs)
    page = b"".join(client.get("/help/").streaming_content).decode()
    for asset in re.findall(r'(?:src|href)="(assets/[^"]+)"', page):
        assert client.get(f"/help/{asset}").status_code == 200, asset


def test_folders_missing_pages_and_paths_outside_the_manual(client, physician):
    client.force_login(physician)
    redirect = client.get("/help/statistics")
    assert redirect.status_code == 302 and redirect["Location"] == "/help/statistics/"
    assert client.get("/help/no-such-page/").status_code == 404
    assert client.get("/help/../manage.py").status_code == 404
    assert client.get("/help/%2e%2e/mkdocs.yml").status_code == 404
    assert client.get(f"/help/{manual.HASHES}").status_code == 404
    assert client.post("/help/").status_code == 405


@pytest.fixture
def small_manual(tmp_path, settings, monkeypatch):
    """A one-page manual of its own in a var folder of its own."""
    source = tmp_path / "source"
    (source / "docs").mkdir(parents=True)
    (source / "docs" / "index.md").write_text("# First edition\n\nHello.\n")
    (source / "mkdocs.yml").write_text("site_name: Small\ntheme:\n  name: material\n  font: false\n")
    monkeypatch.setattr(manual, "CONFIG", source / "mkdocs.yml")
    monkeypatch.setattr(manual, "SOURCES", source / "docs")
    settings.VAR_DIR = tmp_path / "var"
    return source


def test_the_manual_is_built_again_when_its_sources_change(small_manual, tmp_path):
    first = manual.built_site()
    assert "First edition" in (first / "index.html").read_text()
    assert manual.built_site() == first  # built once
    (small_manual / "docs" / "index.md").write_text("# Second edition, a longer title\n")
    second = manual.built_site()
    assert second != first and not first.exists()
    assert "Second edition" in (second / "index.html").read_text()
    assert [p.name for p in (tmp_path / "var" / "help").iterdir() if not p.name.startswith(".")] == [second.name]


def test_a_manual_that_cannot_be_built_answers_503_with_a_message(small_manual, client, physician):
    (small_manual / "mkdocs.yml").write_text("site_name: Small\ntheme:\n  name: no-such-theme\n")
    client.force_login(physician)
    response = client.get("/help/")
    assert response.status_code == 503
    assert "could not be built" in response.content.decode()


@pytest.mark.browser
def test_the_manual_and_its_search_work_in_a_browser(page, live_server, make_user):
    from tests.test_browser_annotation import login

    make_user("reader", "physician", password="a-long-password-1")
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    login(page, "reader", "a-long-password-1")
    try:
        page.get_by_role("link", name="Help").click()
        page.wait_for_url("**/help/", timeout=60_000)  # the first visit may build the manual
        page.get_by_role("heading", name="Mini-CEX Workbench", level=1).wait_for()
        search = page.locator("input.md-search__input")
        search.click()
        # The index is built in a web worker (slow on a busy machine); until it is ready the box says so.
        page.get_by_text("Type to start searching").wait_for(timeout=60_000)
        search.press_sequentially("Krippendorff", delay=20)
        results = page.locator(".md-search-result__item")
        results.first.wait_for()
        assert results.count() > 0
        results.first.locator("a").first.click()
        page.wait_for_load_state()
        assert "/help/" in page.url
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "help-search-failure.png"))
        raise
    outside = [url for url in requests if url.startswith(("http:", "https:", "ws:", "wss:"))
               and not url.startswith(live_server.url)]
    assert outside == [], "the manual loaded something from another site"


def test_the_help_link_opens_the_manual_in_the_readers_language(client, physician, settings):
    """Help opens the Chinese manual for a reader whose page is in Chinese (the manual has those pages:
    docs/index.zh.md, getting-started, physicians, Delphi), the English one otherwise; a page not translated yet
    opens in English."""
    client.force_login(physician)
    assert 'href="/help/">' in client.get("/", headers={"accept-language": "en"}).content.decode()
    home = client.get("/", headers={"accept-language": "zh-CN,zh;q=0.9"}).content.decode()
    assert 'href="/help/zh/">帮助</a>' in home
    assert manual.manual_url("users/physicians/", "zh-hans") == "/help/zh/users/physicians/"
    assert manual.manual_url("users/delphi/", "zh-hans") == "/help/zh/users/delphi/"
    assert manual.manual_url("getting-started/", "zh-hans") == "/help/zh/getting-started/"
    assert manual.manual_url("users/physicians/", "en") == "/help/users/physicians/"
    untranslated = next(p for p in sorted((BASE / "docs").rglob("*.md"))
                        if ".zh." not in p.name and not p.with_suffix(".zh.md").exists())
    page = str(untranslated.relative_to(BASE / "docs").with_suffix("")) + "/"
    assert manual.manual_url(page, "zh-hans") == f"/help/{page}"


def test_the_chinese_manual_is_in_chinese_and_marks_what_is_not_translated_yet(client, physician):
    client.force_login(physician)
    response = client.get("/help/zh/users/physicians/")
    assert response.status_code == 200
    page = b"".join(response.streaming_content).decode()
    assert '<html lang="zh"' in page and "为对话评分" in page
    assert 'hreflang="en"' in page  # the manual's own language switch, back to the English page
    # a page with no Chinese text yet: its English, marked as such, under a note in Chinese
    statistics = b"".join(client.get("/help/zh/statistics/").streaming_content).decode()
    assert "本页尚无中文版" in statistics and '<div lang="en">' in statistics
