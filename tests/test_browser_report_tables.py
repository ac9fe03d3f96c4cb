"""The judge report's tables at 1366 and 1024 px in Chromium: the verdicts and the three model
estimates in view with no key column off-screen and no sideways scrolling inside them, whole dimension names, the
detailed figures on demand, and every table that must scroll doing so inside its own box with a scrollbar that is
drawn (Chromium is started here without headless mode's --hide-scrollbars, so scrollbars take space as on a
desktop)."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model

from annotation.demo import DEMO_FINISHED
from tests.conftest import ARTIFACTS, CHROMIUM, browser_page
from tests.demo_world import load_full_demo
from tests.test_browser_accessibility import check, report
from tests.test_browser_first_look import PASSWORDS, fits, login

WIDTHS = (1366, 1024)
# columns a reader needs: the verdict beside the item, and the three estimates with what the judge is worth
KEY_HEADERS = {"judge-verdicts": ("Item", "Verdict and why", "agreement", "Judge −"),
               "model-estimates-table": ("only", "Judge only", "PPI++", "Judge's labels worth"),
               "model-differences": ("Difference", "PPI++", "PPI++ says", "Judge only")}


@pytest.fixture
def desktop_page(browser, live_server, transactional_db, instrument):
    """A Chromium page whose scrollbars are drawn and take space (headless Chromium hides them by default). Launched
    by the session's Playwright: a second sync Playwright in the same process refuses to start ("Sync API inside
    the asyncio loop") once a browser test has run there."""
    drawn = browser.browser_type.launch(executable_path=CHROMIUM, headless=True,
                                        ignore_default_args=["--hide-scrollbars"],
                                        args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"])
    try:
        with browser_page(drawn, live_server.url) as page:
            yield page
    finally:
        drawn.close()


def demo_report_url() -> str:
    """The demo study's judge report, computed ahead for the demo analyst (as make run does). The demo is the one
    this test process keeps (tests.demo_world), with the reports its loader computed: those are read, not redone."""
    from projects.scoping import in_project
    from projects.services import demo_project
    from scoring.judges import figures as judge_figures
    from scoring.judges.demo import demo_runs

    load_full_demo()
    project = demo_project()
    campaign, runs = demo_runs(project=project)
    with in_project(project):
        job = judge_figures.compute_now(runs[0], campaign, get_user_model().objects.get(username="analyst"))
    assert job.status == "succeeded", job.error
    with in_project(project):
        from scoring.reports import figures as reports

        job = reports.compute_now(campaign, get_user_model().objects.get(username="analyst"))
    assert job.status == "succeeded", job.error
    return f"/judges/runs/{runs[0].pk}/report/?campaign={campaign.pk}"


def table_layout(page, testid: str) -> dict:
    return page.evaluate("""(testid) => {
        const table = document.querySelector(`[data-testid="${testid}"]`);
        const box = table.closest('.table-scroll') || table.parentElement;
        const heads = Array.from(table.querySelectorAll('thead th')).map(th => {
            const r = th.getBoundingClientRect();
            return {text: th.textContent.trim(), left: r.left, right: r.right};
        });
        const cut = Array.from(table.querySelectorAll('th, td')).filter(c => c.scrollWidth > c.clientWidth + 1)
            .map(c => c.textContent.trim().slice(0, 60));
        const r = table.getBoundingClientRect();
        return {left: r.left, right: r.right, scroll: box.scrollWidth, client: box.clientWidth, heads, cut,
                rowNames: Array.from(table.querySelectorAll('tbody td[title]')).map(td => td.textContent.trim())};
    }""", testid)


@pytest.mark.browser
def test_verdicts_and_estimates_in_view_details_on_demand(desktop_page):
    page = desktop_page
    url = demo_report_url()
    login(page, "analyst")
    ARTIFACTS.mkdir(exist_ok=True)
    # first, as a new reader finds them: the key columns at 1366 px, the rest behind the column chooser
    check_key_columns_and_chooser(page, url)
    problems: dict = {}
    moderate: dict = {}
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(url)
        assert fits(page), f"the judge report is wider than {width} px"
        for testid, headers in KEY_HEADERS.items():
            layout = table_layout(page, testid)
            assert layout["scroll"] <= layout["client"] + 1, (width, testid, "scrolls sideways inside its box")
            assert layout["left"] >= 0 and layout["right"] <= width, (width, testid, layout["right"])
            assert layout["cut"] == [], (width, testid, layout["cut"])
            for header in headers:
                head = next(h for h in layout["heads"] if header in h["text"])
                assert head["left"] >= 0 and head["right"] <= width, (width, testid, header, head)
        # whole dimension names, never "3 Comprehensive diagnos..."
        names = table_layout(page, "model-estimates-table")["rowNames"]
        assert "3 Comprehensive diagnostic and treatment abilities (%)" in names, names
        assert not any("…" in name for name in names)
        # the three estimates come before the details, which are closed until asked for
        verdicts = page.get_by_test_id("judge-verdicts").bounding_box()
        estimates = page.get_by_test_id("model-estimates").bounding_box()
        details = page.locator("#details-heading").bounding_box()
        assert verdicts["y"] < estimates["y"] < details["y"]
        closed = page.locator("details.card:not([open])")
        assert closed.count() >= 5 and not page.get_by_test_id("judge-items").is_visible()
        page.get_by_test_id("model-estimates").screenshot(path=str(ARTIFACTS / f"model-estimates-{width}.png"))
        check(page, "judge-report-details-closed", width, problems, moderate)
        # opened, a table that must scroll does so inside its own box, with a drawn scrollbar, in view with it
        for n in range(closed.count()):
            page.locator("details.card").nth(n).locator(":scope > summary").click()
        # every column shown (ticked in the tables' column choosers, kept in this browser): the widest tables
        page.evaluate("""() => document.querySelectorAll('details[data-columns-for] input[type=checkbox]')
            .forEach((box) => { if (!box.checked) box.click(); })""")
        assert page.get_by_test_id("judge-items").is_visible()
        assert fits(page), f"the opened details are wider than {width} px"
        boxes = page.evaluate("""() => Array.from(document.querySelectorAll('.table-scroll')).map(box => ({
            label: box.getAttribute('aria-label'), overflows: box.scrollWidth > box.clientWidth + 1,
            bar: box.offsetHeight - box.clientHeight - box.clientTop * 2,
            height: box.getBoundingClientRect().height, right: box.getBoundingClientRect().right}))""")
        scrolling = [b for b in boxes if b["overflows"]]
        assert scrolling, "no detail table is wide enough to check its scrollbar"
        for box in scrolling:
            assert box["bar"] >= 8, (width, box)  # a scrollbar that takes space is drawn
            assert box["height"] <= 900, (width, box)  # its bottom, with the scrollbar, fits on the screen
            assert box["right"] <= width, (width, box)
        region = page.locator(".table-scroll.tall").filter(has=page.get_by_test_id("judge-items"))
        region.focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_timeout(200)
        if page.evaluate("(el) => el.scrollWidth > el.clientWidth", region.element_handle()):
            assert page.evaluate("(el) => el.scrollLeft > 0", region.element_handle())
        page.get_by_test_id("details-items").screenshot(path=str(ARTIFACTS / f"judge-items-{width}.png"))
        check(page, "judge-report-details-open", width, problems, moderate)
    assert not problems and not moderate, report({**problems, **moderate})  # axe-core: no violation of any impact
    # The agreement report's per-item tables at 1366 px: each item's text beside its code, every column in view
    # without sideways scrolling (they were 1,084-1,456 px wide in a 1,028 px card, the right columns clipped).
    from annotation.models import Campaign
    from projects.scoping import in_project
    from projects.services import demo_project

    with in_project(demo_project()):
        campaign = Campaign.objects.get(name=DEMO_FINISHED)
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(f"/campaigns/{campaign.pk}/report/")
    for testid in ("item-agreement", "scored-items", "item-icc"):
        layout = table_layout(page, testid)
        assert layout["scroll"] <= layout["client"] + 1, (testid, layout["scroll"], layout["client"])
        assert layout["right"] <= 1366 and all(h["right"] <= 1366 for h in layout["heads"]), testid
    first = page.get_by_test_id("item-agreement").locator("tbody th").first.inner_text()
    assert first.startswith("1.1") and len(first) > 10, first  # the code and the item's words


@pytest.mark.browser
def test_an_answer_instruments_report_fits_too(desktop_page, make_user):
    """HIVMedQA's rubric on answers, the raters' answers declared a random sample: the same layout rules, in the
    instrument's words."""
    from annotation.importers import import_dialogues
    from annotation.instruments import install_shipped
    from annotation.label_import import import_labels
    from annotation.models import Campaign, Corpus
    from scoring.judges import figures as judge_figures
    from scoring.judges.models import JudgeRun
    from tests import hivmedqa_data as hiv

    page = desktop_page
    analyst = make_user("ana", "analyst", password=PASSWORDS["analyst"])
    version = install_shipped("hivmedqa-medgpt")[0]
    corpus = Corpus.objects.create(name="HIVMedQA answers")
    import_dialogues(corpus, hiv.answers_jsonl())
    scores = hiv.judge_scores()
    import_labels(corpus, io.BytesIO(hiv.physicians_csv(hiv.physician_scores(scores)).encode()).readlines(),
                  file_name="raters.csv", scale_version=version, campaign_name="Raters", random_sample=True)
    counts = import_labels(corpus, io.BytesIO(hiv.judge_csv(scores).encode()).readlines(), file_name="judge.csv",
                           scale_version=version)
    run = JudgeRun.objects.get(pk=counts["judge_runs"][0]["id"])
    campaign = Campaign.objects.get(name="Raters")
    assert judge_figures.compute_now(run, campaign, analyst).status == "succeeded"
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("ana")
    page.get_by_label("Password").fill(PASSWORDS["analyst"])
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"/judges/runs/{run.pk}/report/?campaign={campaign.pk}")
        assert fits(page), width
        assert page.locator("h1").inner_text().startswith("Judge vs raters")
        for testid in KEY_HEADERS:
            layout = table_layout(page, testid)
            assert layout["scroll"] <= layout["client"] + 1 and layout["right"] <= width, (width, testid)
            assert layout["cut"] == [], (width, testid, layout["cut"])
        text = page.locator("main").inner_text().lower()
        for word in ("dialogue", "doctor model", "physician", "table 5", "table 6", "binary", "item 4"):
            assert word not in text, (width, word)


# Wide tables at 1366 x 768: the judge report's detail tables and the judge selection's per-item tables show their key
# columns (the item with its text, the figures with their intervals, the verdict) inside the viewport without sideways
# scrolling; the other columns wait behind a column chooser (a disclosure of checkboxes, used here from the keyboard)
# that shows a hidden column and remembers the choice per table across a reload. Checked inside the judge report
# test above, which has the demo's report computed already.
CHOOSER_WIDTH, HEIGHT = 1366, 768
# (details, table, key column headings): the columns a reader needs, in view without scrolling
REPORT_TABLES = (("details-checks", "judge-checks", ("Item", "κ vs each", "Beats a constant answer", "Non-inferior")),
                 ("details-items", "judge-items", ("Item", "Accuracy", "κ vs each", "κ ceiling")))
SELECTION_KEYS = ("Candidate", "Verdict", "Agreement with the", "Minus")


def selection_url() -> str:
    """The demo campaign's judge selection, computed ahead for the demo analyst."""
    from projects.scoping import in_project
    from projects.services import demo_project
    from scoring.judges import selection_figures
    from scoring.judges.demo import demo_runs

    project = demo_project()
    campaign, _runs = demo_runs(project=project)
    with in_project(project):
        job = selection_figures.compute_now(campaign, get_user_model().objects.get(username="analyst"))
    assert job.status == "succeeded", job.error
    return f"/judges/selection/?campaign={campaign.pk}"


def key_columns_in_view(page, testid: str, keys: tuple[str, ...]) -> dict:
    layout = table_layout(page, testid)
    assert layout["scroll"] <= layout["client"] + 1, (testid, "scrolls sideways", layout["scroll"], layout["client"])
    assert layout["left"] >= 0 and layout["right"] <= CHOOSER_WIDTH, (testid, layout["right"])
    for key in keys:
        head = next((h for h in layout["heads"] if key in h["text"]), None)
        assert head is not None, (testid, key, [h["text"] for h in layout["heads"]])
        assert head["left"] >= 0 and head["right"] <= CHOOSER_WIDTH, (testid, key, head)
    return layout


def visible_heads(page, testid: str) -> list[str]:
    return page.eval_on_selector_all(
        f"[data-testid={testid}] thead th",
        "els => els.filter(el => el.offsetParent !== null).map(el => el.textContent.trim())")


def check_key_columns_and_chooser(page, report: str) -> None:
    """Key columns in view at 1366 x 768 and the column chooser (from the keyboard) showing a hidden column, on the
    judge report and the judge selection (the analyst logged in, nothing chosen yet in this browser)."""
    selection = selection_url()
    page.set_viewport_size({"width": CHOOSER_WIDTH, "height": HEIGHT})
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
