"""The judge report as a cached background job: one computation per labels, answers,
settings and name rule; the page shows progress, then the report; downloads and the API serve the same cached
report; names follow the README's one rule as in the agreement report and the exports; ``judged_codes`` does not
sort every answer."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotation import labels
from annotation.models import Assignment
from core.jobs.models import Job
from scoring.judges import figures as judge_figures
from scoring.judges.models import JudgeResult
from scoring.judges.report import VerdictSettings, judge_frame, judged_codes
from tests.test_judge_report import build_study
from tests.test_report_pages import run_pending

INTERNAL_NAMES = ("n_items_kappa", "w_uncorrected", "n_tied", "vs_majority", "vs_physicians", "physicians_agreement",
                  "non_inferiority", "paper_rule", "ordered_items", "seeds/0")


@pytest.fixture
def judged(db):
    labels._allowed.cache_clear()
    return build_study()  # three physicians rate six dialogues; a finished judge run with known answers


def judge_jobs() -> int:
    return Job.objects.filter(kind=Job.Kind.JUDGE_REPORT).count()


def visible_text(html: str) -> str:
    return re.sub(r"<[^>]+>", " ", html)


def test_the_report_is_computed_once_and_cached_until_labels_answers_or_settings_change(client, analyst, judged):
    campaign, run = judged
    client.force_login(analyst)
    url = reverse("judge-run-report", args=[run.pk])
    query = {"campaign": campaign.pk, "min_dialogues": 2}
    pending = client.get(url, query).content.decode()
    assert 'data-testid="judge-report-progress"' in pending and 'data-testid="judge-verdicts"' not in pending
    assert 'data-testid="verdict-settings"' in pending and judge_jobs() == 1
    client.get(url, query)
    assert judge_jobs() == 1  # the same report is not queued twice
    job = Job.objects.get(kind=Job.Kind.JUDGE_REPORT)
    status_url = reverse("judge-run-report-status", args=[run.pk, job.pk])
    assert "Computing the report" in client.get(status_url).content.decode()
    run_pending("judge_report")
    assert client.get(status_url)["HX-Refresh"] == "true"
    html = client.get(url, query).content.decode()
    assert 'data-testid="judge-verdicts"' in html and judge_jobs() == 1
    assert html.index('data-testid="judge-summary"') < html.index('data-testid="verdict-settings"')
    text = visible_text(html)
    for name in INTERNAL_NAMES:
        assert name not in text, name
    # other settings are another report; the first one stays cached
    client.get(url, {**query, "margin": "0.2"})
    assert judge_jobs() == 2
    client.get(url, query)
    assert judge_jobs() == 2
    # a label changes: the reports read against the campaign are queued again (and the defaults' for its readers)
    assignment = Assignment.objects.filter(campaign=campaign).first()
    labels.return_for_reannotation(assignment, None, "recheck")

    def viewed() -> int:  # the reports of the page's settings
        return Job.objects.filter(kind=Job.Kind.JUDGE_REPORT, params__names=False,
                                  params__settings__min_dialogues=2).exclude(params__settings__margin=0.2).count()

    assert viewed() == 2
    during = client.get(url, query).content.decode()
    assert viewed() == 2 and 'data-testid="figures-updating"' in during and 'data-testid="judge-verdicts"' in during
    run_pending("judge_report")
    client.get(url, query)
    assert viewed() == 2
    # the reports they replaced no longer hold their figures; the new ones do
    emptied = Job.objects.filter(kind=Job.Kind.JUDGE_REPORT, result={})
    assert job.pk in emptied.values_list("pk", flat=True)
    assert Job.objects.filter(kind=Job.Kind.JUDGE_REPORT, params__settings__margin=0.2).latest("created_at") \
        .result["items"]
    # a judge answer changes (its value, or a retried answer whose time is all that moves): a new report each time
    result = JudgeResult.objects.filter(run=run, status=JudgeResult.Status.DONE, item__code="1.1").first()
    JudgeResult.objects.filter(pk=result.pk).update(value=1 - result.value)
    client.get(url, query)
    assert viewed() == 3
    run_pending("judge_report")
    JudgeResult.objects.filter(pk=result.pk).update(updated_at=timezone.now())
    client.get(url, query)
    assert viewed() == 4
    run_pending("judge_report")
    # a new answer (a pending unit scored)
    JudgeResult.objects.filter(run=run, status=JudgeResult.Status.PENDING).update(status=JudgeResult.Status.DONE,
                                                                               value=1)
    client.get(url, query)
    assert viewed() == 5
    with pytest.raises(Job.DoesNotExist):
        judge_figures.report_job(job.pk, run.pk + 1000)
    assert client.get(reverse("judge-run-report-status", args=[run.pk + 1000, job.pk])).status_code == 404


def test_the_cached_report_is_the_one_served_not_recomputed(client, analyst, judged, monkeypatch):
    campaign, run = judged
    client.force_login(analyst)
    job = judge_figures.compute_now(run, campaign, analyst, VerdictSettings(min_dialogues=2))
    assert job.status == Job.Status.SUCCEEDED
    calls = []
    monkeypatch.setattr("scoring.judges.report.judge_vs_physicians", lambda *a, **k: calls.append(1) or {})
    html = client.get(reverse("judge-run-report", args=[run.pk]),
                      {"campaign": campaign.pk, "min_dialogues": 2}).content.decode()
    assert 'data-testid="judge-verdicts"' in html and calls == []
    data = client.get(reverse("judge-run-report-download", args=[run.pk, "json"]),
                      {"campaign": campaign.pk, "min_dialogues": 2}).json()
    assert data == job.result and calls == []


def test_a_failed_report_says_why_and_can_be_tried_again(client, analyst, judged, monkeypatch):
    from rest_framework.test import APIClient

    campaign, run = judged

    def broken(*args, **kwargs):
        raise RuntimeError("the statistics stack fell over")

    monkeypatch.setattr("scoring.judges.report.judge_vs_physicians", broken)
    client.force_login(analyst)
    url = reverse("judge-run-report", args=[run.pk])
    client.get(url, {"campaign": campaign.pk})
    with pytest.raises(RuntimeError):
        run_pending("judge_report")
    html = client.get(url, {"campaign": campaign.pk}).content.decode()
    assert 'data-testid="report-failed"' in html and "the statistics stack fell over" in html and "Try again" in html
    api = APIClient()
    api.force_authenticate(analyst)
    answer = api.get(f"/api/judge-runs/{run.pk}/report/", {"campaign": campaign.pk})
    assert answer.status_code == 409 and "fell over" in answer.json()["detail"]
    download = client.get(reverse("judge-run-report-download", args=[run.pk, "json"]), {"campaign": campaign.pk})
    assert download.status_code == 409
    monkeypatch.undo()
    response = client.post(f"{url}?campaign={campaign.pk}")
    assert response.status_code == 302 and f"campaign={campaign.pk}" in response.url
    assert Job.objects.filter(kind=Job.Kind.JUDGE_REPORT, status=Job.Status.QUEUED).count() == 1
    run_pending("judge_report")
    assert 'data-testid="judge-verdicts"' in client.get(url, {"campaign": campaign.pk}).content.decode()


def test_names_follow_the_readme_rule_as_in_the_agreement_report_and_the_exports(judged, analyst, coordinator):
    """README, Reports and exports: analysts see pseudonyms unless the coordinator allowed names for the campaign;
    coordinators see names. The judge report, the campaign report and the label export agree for each reader."""
    from scoring.reports import exports
    from scoring.reports import figures as campaign_reports
    from scoring.reports.figures import names_allowed

    campaign, run = judged
    usernames = {"phys0", "phys1", "phys2"}

    def shown(user) -> tuple[set, set, set]:
        judge = judge_figures.compute_now(run, campaign, user).result
        agreement = campaign_reports.compute_now(campaign, user).result
        rows = exports.label_rows(campaign.corpus, campaign, names=names_allowed(user, campaign))
        exported = {r["rater"] for r in rows if r["rater_kind"] == "human"}
        assert judge["names_shown"] == agreement["names_shown"]
        return set(judge["physicians"]), set(agreement["rater_matrix"]["raters"]), exported

    judge, agreement, exported = shown(analyst)
    assert judge == agreement == exported and not judge & usernames
    assert all(re.fullmatch(r"R-[2-9A-Z]{5}", name) for name in judge)
    assert shown(coordinator) == (usernames, usernames, usernames)
    campaign.allow_names = True
    campaign.save(update_fields=["allow_names"])
    assert shown(analyst) == (usernames, usernames, usernames)
    # one report per rule: the analyst's report with names is a new job, not the pseudonymous one
    assert Job.objects.filter(kind=Job.Kind.JUDGE_REPORT, params__names=True).count() == 1
    assert Job.objects.filter(kind=Job.Kind.JUDGE_REPORT, params__names=False).count() == 1


def test_judged_codes_and_the_answers_are_read_without_sorting_every_answer(judged):
    """JudgeResult's default ordering joins run, dialogue, corpus and item and sorts every answer: 0.45 s for the
    codes and 0.2 s for the answers at 64,320 answers; the report needs neither order."""
    _, run = judged
    with CaptureQueriesContext(connection) as queries:
        codes = judged_codes(run)
        judge_frame(run)
    assert codes == set(JudgeResult.objects.filter(run=run).values_list("item__code", flat=True))
    assert len(codes) == 24
    answers = [q["sql"] for q in queries.captured_queries if JudgeResult._meta.db_table in q["sql"]]
    assert answers and all("ORDER BY" not in sql.upper() for sql in answers), answers


@pytest.mark.integration
def test_the_report_is_computed_by_a_real_worker(client, celery_worker, analyst):
    import time

    labels._allowed.cache_clear()
    campaign, run = build_study()
    client.force_login(analyst)
    url = reverse("judge-run-report", args=[run.pk])
    client.get(url, {"campaign": campaign.pk})
    job = Job.objects.get(kind=Job.Kind.JUDGE_REPORT)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not Job.objects.get(pk=job.pk).is_finished:
        time.sleep(0.5)
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert 'data-testid="judge-verdicts"' in client.get(url, {"campaign": campaign.pk}).content.decode()
