"""Wide tables at 1366 x 768 in Chromium: the judge report's detail tables and the judge selection's per-item tables
show their key columns (the item with its text, the figures with their intervals, the verdict) inside the viewport
without sideways scrolling; the other columns wait behind a column chooser (a disclosure of checkboxes, used here
from the keyboard) that shows a hidden column and remembers the choice per table across a reload."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from tests.conftest import ARTIFACTS
from tests.test_browser_first_look import fits, login
from tests.test_browser_report_tables import demo_report_url, desktop_page, table_layout  # noqa: F401

WIDTH, HEIGHT = 1366, 768
# (details, table, key column headings): the columns a reader needs, in view without scrolling
REPORT_TABLES = (("details-checks", "judge-checks", ("Item", "κ vs each", "Beats a constant answer", "Non-inferior")),
                 ("details-items", "judge-items", ("Item", "Accuracy", "κ vs each", "κ ceiling")))
SELECTION_KEYS = ("Candidate", "Verdict", "Agreement with the", "Minus")


def selection_url() -> str:
    """The demo campaign's judge selection, computed ahead for the demo analyst."""
    from projects.scoping import in_project
    from projects.services import demo_project
    from scoring.judges import selection_jobs
    from scoring.judges.demo import demo_runs

    project = demo_project()
    campaign, _runs = demo_runs(project=project)
    with in_project(project):
        job = selection_jobs.compute_now(campaign, get_user_model().objects.get(username="analyst"))
    assert job.status == "succeeded", job.error
    return f"/judges/selection/?campaign={campaign.pk}"


def key_columns_in_view(page, testid: str, keys: tuple[str, ...]) -> dict:
    layout = table_layout(page, testid)
    assert layout["scroll"] <= layout["client"] + 1, (testid, "scrolls sideways", layout["scroll"], layout["client"])
    assert layout["left"] >= 0 and layout["right"] <= WIDTH, (testid, layout["right"])
    for key in keys:
        head = next((h for h in layout["heads"] if key in h["text"]), None)
        assert head is not None, (testid, key, [h["text"] for h in layout["heads"]])
        assert head["left"] >= 0 and head["right"] <= WIDTH, (testid, key, head)
    return layout


def visible_heads(page, testid: str) -> list[str]:
    return page.eval_on_selector_all(
        f"[data-testid={testid}] thead th",
        "els => els.filter(el => el.offsetParent !== null).map(el => el.textContent.trim())")


@pytest.mark.browser
def test_key_columns_in_view_at_1366_and_the_chooser_shows_a_hidden_column(desktop_page):  # noqa: F811
    page = desktop_page
    report, selection = demo_report_url(), selection_url()
    login(page, "analyst")
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    page.goto(report)
    assert fits(page)
    for details, testid, keys in REPORT_TABLES:
        page.get_by_test_id(details).locator("summary").first.click()
        key_columns_in_view(page, testid, keys)
        # the item's words beside its code, not the code alone
        first = page.get_by_test_id(testid).locator("tbody th").first.inner_text()
        assert first.startswith("1.1") and len(first) > 12, first
    assert "Precision" not in visible_heads(page, "judge-items")
    ARTIFACTS.mkdir(exist_ok=True)
    page.get_by_test_id("details-items").screenshot(path=str(ARTIFACTS / "judge-items-key-columns-1366.png"))

    # the chooser, from the keyboard: open it, tick the first hidden column (Precision), and it shows
    chooser = page.locator('details[data-columns-for="judge-items-table"]')
    summary = chooser.locator("summary")
    assert summary.inner_text().startswith("More columns") and "hidden" in summary.inner_text()
    summary.focus()
    page.keyboard.press("Enter")
    assert chooser.evaluate("el => el.open")
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.value")
    assert focused == "precision", focused
    page.keyboard.press("Space")
    assert "Precision" in visible_heads(page, "judge-items")
    assert page.get_by_test_id("judge-items").locator("tbody tr").first.locator("td").nth(2).is_visible()
    # remembered for this table in this browser, and only for it
    page.reload()
    page.get_by_test_id("details-items").locator("summary").first.click()
    assert "Precision" in visible_heads(page, "judge-items")
    assert chooser.locator("input[value=precision]").is_checked()
    stored = page.evaluate("localStorage.getItem('columns:judge-items-table')")
    assert stored and '"precision":true' in stored

    # the judge selection: each item's table shows its key columns, the rest behind the chooser
    page.goto(selection)
    assert fits(page)
    tables = page.get_by_test_id("selection-item-table")
    assert tables.count() >= 1
    heading = page.get_by_test_id("selection-item").first.locator("h2").inner_text()
    assert heading.startswith("Item 1.1") and len(heading) > 12, heading  # the item's words, not only its code
    testid = "selection-item-table"
    layout = key_columns_in_view(page, testid, SELECTION_KEYS)
    assert not any(h["text"] == "Unscored" and h["right"] > 0 for h in layout["heads"] if h["right"] - h["left"] > 0)
    first_chooser = page.locator("details[data-columns-for^=selection-item-]").first
    first_chooser.locator("summary").click()
    first_chooser.get_by_label("Unscored").check()
    shown = page.eval_on_selector_all("[data-testid=selection-item-table] thead th[data-col=unscored]",
                                      "els => els.map(el => el.offsetParent !== null)")
    assert shown and all(shown), shown  # the item tables share the choice
