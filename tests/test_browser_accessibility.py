"""Accessibility (issue 26 item 18): the pages physicians and analysts work in -- the rating page, the compare
(preference) page, the campaign agreement report and the judge report -- show no serious or critical axe-core
violation at 1366 and 1024 px, as they open and in the states a user brings them to (answers saved, comment boxes
and shortcuts open, a report still being computed).

axe-core is injected with ``page.evaluate`` (axe-playwright-python), which runs through the DevTools protocol:
the app's Content-Security-Policy (no eval, no inline script) does not apply to it, while the pages themselves
still run under the policy (the ``page`` fixture fails on any violation it reports). Nothing is silenced: every
rule of axe's default set runs, and the moderate findings are kept out too (each page is checked for them).
"""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from tests.conftest import ARTIFACTS, wait_js
from tests.test_browser_first_look import login, logout

WIDTHS = (1366, 1024)
BLOCKING = {"serious", "critical"}


def axe(page) -> list[dict]:
    """axe-core's violations on the page as it is now (every impact)."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    assert results.response["passes"], "axe-core did not run"
    return results.response["violations"]


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


@pytest.mark.browser
def test_rating_compare_and_report_pages_have_no_serious_axe_violations(page, transactional_db):
    call_command("load_demo", no_logins=True)
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
    logout(page)
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
