"""First look: after `make run`'s demo load, every demo role finds on its home page a "start here" link
that opens a non-empty result in one click; wide pages scroll inside their boxes at 1366 and 1024 px; the README's
screenshots (docs/screenshots/) are taken here, on the demo data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from annotation.demo import DEMO_CAMPAIGN
from annotation.models import Assignment
from tests.conftest import BASE_DIR
from tests.demo_world import load_full_demo

# A test run must not change tracked files: the screenshots go to test-artifacts/ unless UPDATE_SCREENSHOTS=1
# asks for the README's copies in docs/screenshots/ to be replaced.
SCREENSHOTS = BASE_DIR / ("docs" if os.environ.get("UPDATE_SCREENSHOTS") == "1" else "test-artifacts") / "screenshots"
PASSWORDS = {"physician": "physician-demo", "coordinator": "coordinator-demo", "analyst": "analyst-demo",
             "admin": "admin-demo"}
# start-here link text -> (role that opens it, a selector that must match non-empty content on the result page)
RESULTS = {
    "A dialogue you rated in the finished demo study": ("physician", "[data-testid=blind-id]"),
    "Agreement report of the finished demo study": ("analyst", "[data-testid=item-agreement] tbody tr"),
    "Synthetic LLM judge vs physicians": ("analyst", "[data-testid=judge-verdicts] tbody tr"),
    "Preference study result": ("analyst", "[data-testid^=criterion-] table tbody tr"),
    "Delphi statistics, round 2": ("coordinator", "[data-testid=focus-group] tbody tr"),
    "Progress of the finished demo campaign": ("coordinator", "[data-testid=rater-progress] tbody tr"),
}


def login(page, username: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORDS[username])
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/")


def logout(page) -> None:
    page.context.clear_cookies()


def fits(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def shoot(page, name: str, selector: str) -> Path:
    """A viewport screenshot with ``selector`` near the top (its heading above it in view), for the README."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.evaluate("(el) => { el.scrollIntoView({block: 'start'}); window.scrollBy(0, -140); }",
                  page.locator(selector).first.element_handle())
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    assert path.stat().st_size > 20_000
    return path


@pytest.mark.browser
def test_every_demo_role_reaches_a_finished_result_from_home(page, transactional_db, demo_scope):
    load_full_demo()
    page.set_viewport_size({"width": 1366, "height": 900})
    seen: dict[str, str] = {}
    for role in PASSWORDS:
        login(page, role)
        start = page.get_by_test_id("start-here")
        assert start.is_visible(), role
        if role == "admin":  # instance-wide, lands in "Default": Start here offers the demo project first
            start.locator("form[data-kind=switch] button").click()
            page.wait_for_load_state()
            start = page.get_by_test_id("start-here")
        links = start.locator("a[data-kind=demo]")
        assert links.count() >= 1, role
        for text in [links.nth(i).inner_text() for i in range(links.count())]:
            page.goto("/")
            page.get_by_test_id("start-here").get_by_role("link", name=text).click()  # click 1
            page.wait_for_load_state()
            if text in RESULTS:
                selector = RESULTS[text][1]
                assert page.locator(selector).count() >= 1, (role, text, page.url)
                assert page.locator(selector).first.inner_text().strip(), (role, text)
                seen.setdefault(text, role)
            assert "/accounts/login/" not in page.url and page.title() != "Forbidden", (role, text)
        logout(page)
    assert set(seen) == set(RESULTS), set(RESULTS) - set(seen)


@pytest.mark.browser
def test_wide_pages_scroll_inside_their_boxes_and_readme_screenshots(page, transactional_db, demo_scope):
    load_full_demo()
    page.set_viewport_size({"width": 1366, "height": 900})
    login(page, "coordinator")
    start = page.get_by_test_id("start-here")
    urls = {text: start.get_by_role("link", name=text).get_attribute("href")
            for text in ("Agreement report of the finished demo study", "Synthetic LLM judge vs physicians",
                         "Preference study result", "Delphi statistics, round 2",
                         "Progress of the finished demo campaign", "Per-item vs per-dialogue judging")}
    page.goto(urls["Delphi statistics, round 2"])
    study = page.get_by_role("link", name="Demo: LLM-specific Mini-CEX Delphi").first.get_attribute("href")
    pages = [*urls.values(), study]
    for width in (1366, 1024):
        page.set_viewport_size({"width": width, "height": 900})
        for url in pages:
            page.goto(url)
            assert fits(page), f"{url} is wider than {width} px"
    # Narrower still (a phone held sideways), the Delphi statistics table scrolls inside its region, which takes
    # keyboard focus.
    page.set_viewport_size({"width": 640, "height": 900})
    page.goto(urls["Delphi statistics, round 2"])
    region = page.locator(".table-scroll[role=region]").first
    assert region.get_attribute("tabindex") == "0" and region.get_attribute("aria-label")
    assert page.evaluate("(el) => el.scrollWidth > el.clientWidth", region.element_handle())
    region.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_timeout(300)
    assert page.evaluate("(el) => el.scrollLeft > 0", region.element_handle())

    page.set_viewport_size({"width": 1366, "height": 900})
    shoot(page, "delphi-round", "[data-testid=round-summary]")
    page.goto(urls["Agreement report of the finished demo study"])
    shoot(page, "agreement-report", "figure.plot")
    page.goto(urls["Synthetic LLM judge vs physicians"])
    shoot(page, "judge-vs-physicians", "[data-testid=judge-verdicts]")
    page.goto(urls["Preference study result"])
    shoot(page, "preference-result", "[data-testid^=criterion-]")
    logout(page)
    login(page, "physician")
    page.get_by_role("link", name="Rate a demo dialogue yourself").click()
    page.wait_for_load_state()
    assert page.get_by_role("button", name="Submit").count() == 1
    # An English dialogue for the README (the test machine may have no CJK font).
    english = Assignment.objects.filter(rater__username="physician", campaign__name=DEMO_CAMPAIGN,
                                        dialogue__language="en").order_by("position").first()
    page.goto(f"/rate/{english.pk}/")
    shoot(page, "rating", "main")
