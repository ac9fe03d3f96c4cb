"""The judge report read at a glance and the report plots and figures that a review found wrong, in a real
browser at 1366 and 1024 px on the demo data (``load_demo`` precomputes both reports)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import ARTIFACTS
from tests.demo_world import load_full_demo
from tests.test_browser_first_look import fits, login

WIDTHS = (1366, 1024)
INTERNAL_NAMES = ("n_items_kappa", "w_uncorrected", "n_tied", "vs_majority", "vs_physicians", "physicians_agreement",
                  "non_inferiority", "paper_rule", "ordered_items", "seeds/0")


def boxes(page, selector: str) -> list[dict]:
    return page.eval_on_selector_all(selector, """els => els.map(el => {
        const r = el.getBoundingClientRect();
        return {x: r.left, y: r.top, right: r.right, bottom: r.bottom, width: r.width, height: r.height,
                text: (el.textContent || '').trim()};
    })""")


def overlap(a: dict, b: dict, slack: float = 0.5) -> bool:
    return (min(a["right"], b["right"]) - max(a["x"], b["x"]) > slack
            and min(a["bottom"], b["bottom"]) - max(a["y"], b["y"]) > slack)


@pytest.mark.browser
def test_judge_report_and_agreement_report_at_1366_and_1024(page, transactional_db):
    load_full_demo()
    login(page, "analyst")
    start = page.get_by_test_id("start-here")
    judge = start.get_by_role("link", name="Synthetic LLM judge vs physicians").get_attribute("href")
    agreement = start.get_by_role("link", name="Agreement report of the finished demo study").get_attribute("href")
    ARTIFACTS.mkdir(exist_ok=True)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(judge)
        # 1. the summary comes before the settings; the verdict table fits the screen with the verdict beside the
        # item, and the reasons wrap inside their cells
        summary = page.get_by_test_id("judge-summary").bounding_box()
        settings = page.get_by_test_id("verdict-settings").bounding_box()
        assert summary["y"] + summary["height"] <= settings["y"], width
        assert fits(page), f"the judge report is wider than {width} px"
        table = page.get_by_test_id("judge-verdicts").bounding_box()
        assert table["x"] >= 0 and table["x"] + table["width"] <= width, (width, table)
        heading = page.get_by_test_id("verdict-heading").bounding_box()
        assert heading["x"] + heading["width"] <= width, (width, heading)
        items = boxes(page, "[data-testid=judge-verdicts] tbody th[scope=row]")
        verdicts = boxes(page, "[data-testid=judge-verdicts] tbody td.verdict")
        assert len(items) == len(verdicts) == 24
        for item, verdict in zip(items, verdicts, strict=True):
            assert abs(verdict["y"] - item["y"]) < 1 and 0 <= verdict["x"] - item["right"] < 2, (item, verdict)
            assert verdict["right"] <= width
        assert page.eval_on_selector_all("[data-testid=judge-verdicts] td, [data-testid=judge-verdicts] th",
                                         "els => els.every(el => el.scrollWidth <= el.clientWidth + 1)")
        reasons = boxes(page, "[data-testid=judge-verdicts] ul.reasons li")
        line = page.evaluate("parseFloat(getComputedStyle(document.querySelector('ul.reasons li')).lineHeight)")
        assert reasons and max(r["height"] for r in reasons) > 1.5 * line, "no reason wraps onto a second line"
        # 2. a reason about non-inferiority follows the interval and never contradicts the point estimate
        rows = page.eval_on_selector_all("[data-testid=judge-verdicts] tbody tr", """rows => rows.map(r => ({
            difference: r.cells[3].textContent.trim(), reasons: r.querySelector('td.verdict').textContent}))""")
        for row in rows:
            if "Non-inferiority not shown" in row["reasons"]:
                assert "minus the margin" in row["reasons"], row
                value = float(re.match(r"[-+−]?\d+\.\d+", row["difference"]).group().replace("−", "-"))
                if value >= 0:
                    assert "less than they agree" not in row["reasons"], row
        text = page.inner_text("main")
        for name in INTERNAL_NAMES:
            assert name not in text, name
        page.get_by_test_id("judge-verdicts").screenshot(path=str(ARTIFACTS / f"judge-verdicts-{width}.png"))

        page.goto(agreement)
        assert fits(page), f"the agreement report is wider than {width} px"
        # 6. the rater x rater heatmaps: no name or value label covers the other panel or another label
        figure = "[data-testid=rater-heatmap] svg"
        labels = boxes(page, f"{figure} [id^=xtick_] text, {figure} [id^=ytick_] text")
        images = boxes(page, f"{figure} image")
        assert len(images) == 3 and len(labels) >= 2 * 4, (len(images), len(labels))  # two panels and the colorbar
        for label in labels:
            for image in images:
                assert not overlap(label, image), (label, image)
        for i, a in enumerate(labels):
            for b in labels[i + 1:]:
                assert not overlap(a, b), (a, b)
        page.locator("[data-testid=rater-heatmap]").screenshot(path=str(ARTIFACTS / f"heatmap-{width}.png"))
        # 8. the box plot has a key for its markers; p-values never print as 0.0000; no internal names
        key = page.inner_text("[data-testid=model-scores-plot]")
        for entry in ("median", "mean", "quartiles", "beyond the whiskers"):
            assert entry in key, entry
        text = page.inner_text("main")
        assert "0.0000" not in text and "p = 0.000" not in text
        assert "p < 0.0001" in text or "< 0.0001" in page.inner_text("[data-testid=icc]")
        for name in INTERNAL_NAMES:
            assert name not in text, name
