"""Accessibility: every page each role reaches meets WCAG 2.1 A and AA as far as axe-core
checks it, at 1366 px and at a phone's width, and the pages physicians and analysts work in show no violation of
any axe rule in the states a user brings them to.

- The crawl (``tests/a11y.py``): each role (physician, coordinator, analyst, administrator) logs in on the demo data
  and follows every same-origin link from its home (the physician also opens a Delphi panel link, as from its
  e-mail), leaving out logging out, downloads and POST-only actions, one page per URL pattern (a pattern another
  office role's crawl checked at the same width is visited, not checked again); on each page axe-core runs with
  the WCAG 2.1 A/AA rules (tags wcag2a, wcag2aa, wcag21a, wcag21aa), Chinese text must sit inside ``lang="zh"``,
  charts must have a text alternative, and the page must answer without an error. At the phone's
  width the context emulates a touch screen, and the physician's pages of the app are also checked for touch (every
  control at least 44 x 44 CSS px, nothing wider than the screen, nothing covered).
- Every page of the manual behind the Help link at 1366 px; at the phone's width, its English and Chinese first pages.
- The rating page, the compare (preference) page, the campaign agreement report and the judge report at 1366 and
  1024 px, as they open and after answers, open comment boxes and reports still being computed: every rule of
  axe's default set (best practices too), no violation of any impact.

Not checked (the accessibility statement in the README names them): Django's admin site (``/admin/``, for
administrators) and the API's interactive documentation and browsable API (``/api/``), which come from Django,
Swagger UI and Django REST framework.

axe-core is injected with ``page.evaluate`` (axe-playwright-python), which runs through the DevTools protocol:
the app's Content-Security-Policy (no eval, no inline script) does not apply to it, while the pages themselves
still run under the policy (``browser_page`` fails on any violation it reports). One demo world is loaded for the
module and served by a live server of its own (tests.conftest.shared_live_world).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.urls import reverse

from tests.a11y import DESKTOP, PHONE, crawl, geometry_problems, run_axe
from tests.a11y import axe as wcag_axe
from tests.conftest import ARTIFACTS, browser_page, shared_live_world, wait_js
from tests.demo_world import load_full_demo
from tests.test_browser_first_look import PASSWORDS

WIDTHS = (1366, 1024)
BLOCKING = {"serious", "critical"}
CONTEXTS = {"desktop": {"viewport": DESKTOP}, "phone": {"viewport": PHONE, "has_touch": True, "is_mobile": True}}
# pages each role's crawl must reach (URL pattern names): the crawl itself is checked, not only what it found
MUST_REACH = {
    "physician": {"home", "rate", "compare-task", "delphi:panel-home", "scale-detail", "password_change", "help"},
    "coordinator": {"home", "campaign-detail", "campaign-report", "campaign-dialogue", "judge-run-report", "judge-run",
                    "preference-detail", "preference-results", "delphi:study", "delphi:round", "generation-home",
                    "corpus-detail", "dialogue-detail", "privacy-review", "system", "project-detail"},
    "analyst": {"home", "campaign-report", "judge-run-report", "preference-results", "delphi:round", "corpus-detail"},
    "admin": {"home", "system", "project-detail", "campaign-new", "scale-new", "delphi:study-new"},
}

# the test database is created for the module, whose tests share its world (tests.conftest.shared_live_world)
pytestmark = [pytest.mark.django_db, pytest.mark.shared_live_world]


@pytest.fixture(autouse=True)
def _django_db_marker():
    """No transaction per test: the demo world is committed and shared (tests.conftest.shared_live_world)."""


@dataclass
class Demo:
    url: str
    delphi_link: str  # a panel link of the demo physician (an open round), as its e-mail carries it


def _load_demo(url: str) -> Demo:
    from django.contrib.auth import get_user_model

    from annotation import models
    from annotation.scales import load_instrument, read_instrument
    from delphi import services as delphi
    from projects.scoping import in_project
    from projects.services import demo_project
    from tests.factories import mini_cex

    load_instrument(read_instrument(), models)
    load_full_demo()
    users = get_user_model().objects
    coordinator = users.get(username="coordinator")
    with in_project(demo_project()):
        study = delphi.create_study(title="Demo panel on a phone", user=coordinator, version=mini_cex(),
                                    reminder_days=0)
        panelist = delphi.invite(study, coordinator, users=[users.get(username="physician")])[0]
        delphi.open_round(study.rounds.get(number=1), coordinator, notify=False)
        link = reverse("delphi:panel-home", args=[delphi.make_token(panelist)])
    return Demo(url=url, delphi_link=link)


@pytest.fixture(scope="module")
def demo(django_db_setup, django_db_blocker):
    with shared_live_world(django_db_blocker, _load_demo) as world:
        yield world


def login(page, username: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORDS[username])
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


def axe(page) -> list[dict]:
    """axe-core's violations on the page as it is now (every rule of its default set, every impact)."""
    results = run_axe(page, {"resultTypes": ["violations"]})
    assert results["passes"], "axe-core did not run"
    return results["violations"]


def check(page, name: str, width: int, problems: dict, moderate: dict) -> None:
    found = axe(page)
    if found:
        ARTIFACTS.mkdir(exist_ok=True)
        (ARTIFACTS / f"axe-{name}-{width}.json").write_text(json.dumps(found, indent=2))
    for impact, into in ((BLOCKING, problems), ({"moderate", "minor"}, moderate)):
        hits = [v for v in found if v.get("impact") in impact]
        if hits:
            into[f"{name} @ {width}px"] = "\n".join(
                f"{v['id']} ({v['impact']}): {v['help']} -- " + "; ".join(n["html"][:160] for n in v["nodes"][:4])
                for v in hits)


def report(found: dict) -> str:
    return "\n\n".join(f"{name}:\n{text}" for name, text in found.items())


def touch_problems(page) -> list[str]:
    """The touch checks on the physician's pages of the app; the manual behind the Help link is laid out by its
    theme (MkDocs Material): axe-core's rules only there."""
    return [] if "/help/" in page.url else geometry_problems(page)


# The office roles' crawls run in turn at each width: a page pattern the coordinator's crawl checked is visited again
# by the administrator's and the analyst's for its answer and its links (each role's crawl must still reach its
# pages), but axe-core runs on it once; the same template shown to a role with fewer controls was about half of the
# crawls' time. The physician's pages (with the touch checks at the phone's width) have a crawl of their own.
CRAWLS = {"physician": ("physician",), "office": ("coordinator", "admin", "analyst")}


@pytest.mark.browser
@pytest.mark.parametrize("width", CONTEXTS)
@pytest.mark.parametrize("roles", CRAWLS)
def test_every_page_a_role_reaches_meets_wcag_21_aa(demo, browser, roles, width):
    """At the phone's width without axe's colour contrast rule: the app's colours do not depend on the width
    (tests/test_stylesheets.py), and that rule was a third of the crawls' time."""
    checked: set = set()
    problems = []
    for role in CRAWLS[roles]:
        touch = role == "physician" and width == "phone"
        with browser_page(browser, demo.url, **CONTEXTS[width]) as page:
            login(page, role)
            seeds = ["/"] + ([demo.delphi_link] if role == "physician" else [])
            result = crawl(page, role, demo.url, seeds, width=width, check=touch_problems if touch else None,
                           contrast=width == "desktop", checked_elsewhere="/help/", checked=checked)
        reached = {name for name, _ in result.visited}
        assert MUST_REACH[role] <= reached, f"the {role}'s crawl missed {MUST_REACH[role] - reached}"
        problems.append(result.problems())
    assert not any(problems), "\n".join(problems)


def _english_page_in_the_chinese_manual(path: str) -> bool:
    """A page under /help/zh/ without a Chinese text of its own (docs/*.zh.md): the English page again, checked as
    such at its English address."""
    if not path.startswith("/help/zh/"):
        return False
    page = path.removeprefix("/help/zh/").strip("/") or "index"
    return not (settings.BASE_DIR / "docs" / f"{page}.zh.md").exists()


@pytest.mark.browser
@pytest.mark.parametrize("width", CONTEXTS)
def test_every_page_of_the_manual_meets_wcag_21_aa(demo, browser, width):
    """The Help link's manual (docs/ built with MkDocs): at 1366 px every page, not one per URL pattern (each is its
    own text). At the phone's width the theme's phone layout (its navigation drawer and header) on the English and
    the Chinese manual's first pages, without axe's colour contrast rule, as in the crawls above: the theme's colours
    do not depend on the width, and the pages' own text is the one checked at 1366 px (checking every page again at
    the phone's width was 13-26 s a pass)."""
    every_page = width == "desktop"
    with browser_page(browser, demo.url, **CONTEXTS[width]) as page:
        login(page, "physician")
        result = crawl(page, "physician", demo.url, ["/help/", "/help/zh/"], width=width, within="/help/",
                       distinct=frozenset({"help", "help-page"}) if every_page else frozenset(),
                       skip=_english_page_in_the_chinese_manual, contrast=every_page)
    if every_page:
        assert len(result.visited) >= 15, sorted(result.visited)
    else:
        assert sorted(urlsplit(url).path for url in result.visited.values()) == ["/help/", "/help/zh/"]
    assert not result.problems(), result.problems()


@pytest.mark.browser
def test_rating_compare_and_report_pages_have_no_axe_violations(demo, browser):
    with browser_page(browser, demo.url) as page:
        check_rating_compare_and_reports(page)


def check_rating_compare_and_reports(page) -> None:
    problems: dict[str, str] = {}
    moderate: dict[str, str] = {}
    login(page, "analyst")
    start = page.get_by_test_id("start-here")
    agreement = start.get_by_role("link", name="Agreement report of the finished demo study").get_attribute("href")
    judge = start.get_by_role("link", name="Synthetic LLM judge vs physicians").get_attribute("href")
    # the check itself: axe runs under the page's CSP and reports a field without a label as critical
    page.goto(judge)
    page.evaluate("document.querySelector('main').appendChild(document.createElement('input'))")
    assert any(v["id"] == "label" and v["impact"] == "critical" for v in axe(page))
    assert any(v["id"] == "label" for v in wcag_axe(page))  # the crawl's rules (WCAG 2.1 A/AA) too
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(agreement)
        assert page.get_by_test_id("item-agreement").is_visible()
        check(page, "agreement-report", width, problems, moderate)
        page.goto(judge)
        assert page.get_by_test_id("judge-verdicts").is_visible()
        page.locator("details summary").first.click()  # the rule behind the verdicts, opened
        check(page, "judge-report", width, problems, moderate)
        # reports being computed (other settings): the progress the page shows while a worker works
        page.goto(f"{agreement}?ci=bca&correlation=tetrachoric")
        assert page.locator("#report-progress").is_visible()
        check(page, "agreement-report-pending", width, problems, moderate)
        page.goto(f"{judge}&min_dialogues=5")
        assert page.get_by_test_id("judge-report-progress").is_visible()
        check(page, "judge-report-pending", width, problems, moderate)
        page.goto(f"{judge}&floor=7")
        assert page.get_by_role("alert").first.is_visible()
        check(page, "judge-report-bad-settings", width, problems, moderate)
    page.context.clear_cookies()  # logged out
    login(page, "physician")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto("/rate/")
        page.wait_for_load_state()
        assert page.locator("fieldset.item").count() > 0, page.url
        check(page, "rating", width, problems, moderate)
        page.keyboard.press("1")  # the first item answered by keyboard, then its comment box opened
        wait_js(page, "() => document.querySelector('fieldset.item .save-state').dataset.state === 'saved'")
        page.locator("fieldset.item details.item-comment summary").first.click()
        check(page, "rating-answered", width, problems, moderate)
        page.goto("/compare/")
        page.wait_for_load_state()
        assert page.locator("fieldset.criterion").count() > 0, page.url
        check(page, "compare", width, problems, moderate)
        page.keyboard.press("a")
        wait_js(page, "() => document.querySelector('fieldset.criterion .save-state').dataset.state === 'saved'")
        page.locator("details.shortcuts summary").click()
        check(page, "compare-answered", width, problems, moderate)
    assert not problems, report(problems)
    assert not moderate, report(moderate)
