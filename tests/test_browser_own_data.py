"""Browser test of bring-your-own-data: the agreement report of a scale-only instrument rating answers (HIVMedQA's
rubric on repeated answers of three models) speaks of answers, models and raters, has no empty section and no all-zero
plot; an imported judge's run page shows its provenance and the judge's Table 2."""

from __future__ import annotations

import io
import re

import pytest

from annotation.importers import import_dialogues
from annotation.instruments import install_shipped
from annotation.label_import import import_labels
from annotation.models import Campaign, Corpus
from scoring.judges.models import JudgeRun
from scoring.reports.figures import compute_now
from tests import hivmedqa_data as hiv
from tests.conftest import ARTIFACTS
from tests.test_browser_annotation import login

# What the Mini-CEX's reports say and a rubric on answers must not (its items are scored 0-5 by raters).
MINI_CEX_WORDS = ("dialogue", "doctor model", "physician", "binary", "item 4", "total score", "0-23",
                  "seeds/", "Rater × rater")


def lines(text: str) -> list[bytes]:
    return io.BytesIO(text.encode()).readlines()


@pytest.mark.browser
def test_a_scale_only_answers_report_fits_its_instrument(page, make_user):
    analyst = make_user("ana", "analyst", password="a-long-password-1")
    version = install_shipped("hivmedqa-medgpt")[0]
    corpus = Corpus.objects.create(name="HIVMedQA answers")
    import_dialogues(corpus, hiv.answers_jsonl())
    scores = hiv.judge_scores()
    import_labels(corpus, lines(hiv.physicians_csv(hiv.physician_scores(scores, replicates=(1, 2)))),
                  file_name="raters.csv", scale_version=version, campaign_name="Raters")
    counts = import_labels(corpus, lines(hiv.judge_csv(scores)), file_name="judge.csv", scale_version=version)
    campaign = Campaign.objects.get(name="Raters")
    compute_now(campaign, analyst)
    login(page, "ana", "a-long-password-1")
    page.goto(f"/campaigns/{campaign.pk}/report/")
    page.wait_for_selector("#methods")
    text = page.locator("main").inner_text()
    for word in MINI_CEX_WORDS:
        assert word.lower() not in text.lower(), word
    for expected in ("Agreement among raters per item", "answers", "Gwet's AC2", "Exact / within one",
                     "Repeated answers", "mean over cases ± SD over replicates"):
        assert expected in text, expected
    # no empty section: every card has a table, a figure or a statement beyond its heading
    for card in page.locator("main section.card").all():
        body = card.inner_text().strip().split("\n", 1)
        assert len(body) == 2 and body[1].strip(), body[0]
    # the plots: per-item agreement and the models' criterion means with CIs; no plot of all-zero totals
    plots = page.locator("figure.plot")
    assert plots.count() == 2 and page.locator('[data-testid="criterion-means-plot"] svg').count() == 1
    replicates = page.locator('[data-testid="replicates"]')
    assert replicates.locator("tbody tr").count() == len(hiv.MODELS)
    assert re.search(r"\d\.\d\d ± \d\.\d\d", replicates.locator("tbody tr").first.inner_text())
    page.screenshot(path=str(ARTIFACTS / "report-answers.png"), full_page=True)
    # the imported judge's run: provenance and the judge's Table 2
    run = JudgeRun.objects.get(pk=counts["judge_runs"][0]["id"])
    page.goto(f"/judges/runs/{run.pk}/")
    provenance = page.locator('[data-testid="run-provenance"]').inner_text()
    assert "judge.csv" in provenance and run.source_sha256 in provenance and hiv.JUDGE_MODEL in provenance
    assert page.locator('[data-testid="judge-replicates"] tbody tr').count() == len(hiv.MODELS)
    assert "doctor model" not in page.locator("main").inner_text().lower()
    page.goto("/judges/")
    assert f"(imported scores, {hiv.JUDGE_MODEL})" in page.locator("main").inner_text()
