"""In the browser, on the demo study: the judge report's three model estimates and its planner, the
finished campaign's random sample with the planner, and the planner on the new-campaign page (htmx partials)."""

from __future__ import annotations

import re

import pytest

from annotation.demo import DEMO_FINISHED, DEMO_STUDY_CORPUS
from annotation.models import Campaign, Corpus
from scoring.judges.demo import demo_runs
from tests.conftest import ARTIFACTS
from tests.demo_world import load_full_demo
from tests.test_report_pages import run_pending


def login(page, username: str, password: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/")


def plan_stored(where) -> None:
    """A worker computes the plan the planner partial in ``where`` asked for ("Computing the plan…" meanwhile): the
    queued jobs run as a worker runs them, and the partial, polling itself, shows the stored plan."""
    where.get_by_test_id("planner-computing").wait_for()
    run_pending()


@pytest.mark.browser
def test_model_estimates_and_planner_in_the_browser(page, transactional_db, demo_scope):
    load_full_demo()
    campaign, runs = demo_runs()
    login(page, "coordinator", "coordinator-demo")
    page.goto(f"/judges/runs/{runs[0].pk}/report/?campaign={campaign.pk}")
    table = page.get_by_test_id("model-estimates-table")
    rows = table.locator("tbody tr")
    assert rows.count() == 3 * 5  # three models x (three dimensions, all binary items, item 4)
    page.set_viewport_size({"width": 1366, "height": 900})
    overall = table.locator("tr[data-model=demo-doctor-A][data-scope=all]")
    cells = overall.locator("td")
    assert re.search(r"\d+\.\d \[", cells.nth(1).inner_text())  # physicians only
    assert re.search(r"\d+\.\d \[", cells.nth(3).inner_text())  # PPI++
    assert cells.nth(4).inner_text().startswith("+")  # what the judge's labels are worth
    assert "the judge's labels are worth" in page.get_by_test_id("ppi-worth").inner_text()
    assert "PPI++ scores over all binary items" in page.get_by_test_id("model-differences-summary").inner_text()
    assert "alone" in page.get_by_test_id("report-planner").inner_text()
    ARTIFACTS.joinpath("screenshots").mkdir(parents=True, exist_ok=True)
    page.get_by_test_id("model-estimates").screenshot(path=str(ARTIFACTS / "screenshots" / "model-estimates.png"))
    # the planner for another half-width, loaded when opened
    page.get_by_text("Plan another score or half-width").click()
    planner = page.get_by_test_id("model-estimates").get_by_test_id("sample-planner")
    plan_stored(planner)
    planner.get_by_label("95% interval +/-").fill("15")
    planner.get_by_role("button", name="Plan").click()
    plan_stored(planner)
    page.get_by_test_id("model-estimates").get_by_test_id("planner-models").get_by_text("+/-15 points").first.wait_for()
    assert "with this judge scoring 100 dialogue(s)" in page.get_by_test_id("model-estimates").get_by_test_id(
        "planner-models").inner_text()
    for width in (1366, 1024):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), width

    # the finished campaign: its random sample and the planner
    page.goto(f"/campaigns/{Campaign.objects.get(name=DEMO_FINISHED).pk}/")
    assert "A random sample of 48 of the 300 dialogues" in page.get_by_test_id("random-sample-text").inner_text()
    assert page.get_by_test_id("random-sample-strata").locator("tbody tr").count() == 3
    plan_stored(page.get_by_test_id("random-sample"))
    page.get_by_test_id("random-sample").get_by_test_id("planner-models").wait_for()
    assert "alone" in page.get_by_test_id("random-sample").get_by_test_id("planner-models").inner_text()
    page.get_by_test_id("random-sample").screenshot(path=str(ARTIFACTS / "screenshots" / "random-sample.png"))
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

    # a new campaign: the planner follows the corpus chosen in the form
    page.goto("/campaigns/new/")
    page.get_by_label("Corpus").select_option(str(Corpus.objects.get(name=DEMO_STUDY_CORPUS).pk))
    plan_stored(page.locator("#sample-size"))
    page.locator("#sample-size [data-testid=planner-models]").wait_for()
    assert "physician-labelled dialogue(s) alone" in page.locator("#sample-size").inner_text()
    page.get_by_label("Scale version").select_option(str(campaign.scale_version_id))
    page.get_by_label("Random sample of").fill("60")
    page.get_by_label("Draw within each doctor model").check()
    page.get_by_label("Name").fill("Sampled in the browser")
    page.get_by_role("button", name="Create campaign").click()
    page.wait_for_url(re.compile(r"/campaigns/\d+/$"))
    assert "(a random sample)" in page.locator("main").inner_text()
    assert "A random sample of 60 of the 300 dialogues" in page.get_by_test_id("random-sample-text").inner_text()
