"""Analyst report pages: computed by a worker, cached until labels change, downloads."""

import csv
import io
import random
import time

import pytest
from django.urls import reverse

from annotation import labels
from annotation.models import Assignment
from core.jobs import services as jobs
from core.jobs.models import Job
from tests.factories import campaign_with
from tests.test_reports import rate_everything


@pytest.fixture
def rated(make_user):
    raters = [make_user(f"doc{i}", "physician") for i in range(3)]
    campaign = campaign_with(raters, n=6, overlap=3, name="Rep")
    rate_everything(campaign, random.Random(1))
    return campaign


def run_pending(*kinds: str):
    """What the workers do once the changes stopped: every queued job (of ``kinds``, when given: a test that reads
    one kind of figures need not compute the others), a debounced one's quiet time taken as over
    (core/jobs/figures.py)."""
    queued = Job.objects.filter(status=Job.Status.QUEUED)
    for job in queued.filter(kind__in=kinds) if kinds else queued:
        if "not_before" in job.params:
            Job.objects.filter(pk=job.pk).update(params={k: v for k, v in job.params.items() if k != "not_before"})
        jobs.execute(job.pk)


def test_report_is_computed_once_and_cached_until_labels_change(client, analyst, rated):
    client.force_login(analyst)
    # The submissions queued the report (for coordinators and for analysts): the page shows it is on its way.
    pending = client.get(reverse("campaign-report", args=[rated.pk])).content.decode()
    assert "Computing the report" in pending
    job = Job.objects.get(kind="campaign_report", params__names=False)
    status = client.get(reverse("campaign-report-status", args=[rated.pk, job.pk]))
    assert status.status_code == 200 and "progress" in status.content.decode()
    run_pending()
    assert client.get(reverse("campaign-report-status", args=[rated.pk, job.pk]))["HX-Refresh"] == "true"
    html = client.get(reverse("campaign-report", args=[rated.pk])).content.decode()
    for marker in ("item-agreement", "icc", "reliability", "models", "<svg", "Landis", "Koo", "pingouin"):
        assert marker in html, marker
    assert "doc0" not in html  # pseudonyms for analysts
    client.get(reverse("campaign-report", args=[rated.pk]))
    assert Job.objects.filter(kind="campaign_report", params__names=False).count() == 1  # cached
    assignment = Assignment.objects.filter(campaign=rated).first()
    labels.return_for_reannotation(assignment, None, "recheck")
    client.get(reverse("campaign-report", args=[rated.pk]))
    assert Job.objects.filter(kind="campaign_report", params__names=False).count() == 2  # labels changed: recomputed
    # Other options are another report, which the new labels' report does not replace.
    client.get(reverse("campaign-report", args=[rated.pk]), {"ci": "bca"})
    run_pending()
    # The report on the old labels no longer holds its figures (each is a whole report); the row stays.
    assert Job.objects.get(pk=job.pk).result == {}
    kept = Job.objects.filter(kind="campaign_report", params__names=False).exclude(pk=job.pk)
    assert kept.count() == 2 and all(other.result.get("items") for other in kept)
    # Should the old labels' fingerprint come back, the emptied job is never served: a new one is computed.
    Job.objects.filter(pk=job.pk).update(params={**job.params, "fingerprint": kept.get(
        params__ci_method="percentile").params["fingerprint"]})
    Job.objects.filter(kind="campaign_report").exclude(pk=job.pk).delete()
    pending = client.get(reverse("campaign-report", args=[rated.pk])).content.decode()
    assert "Computing the report" in pending
    assert Job.objects.filter(kind="campaign_report", status=Job.Status.QUEUED).count() == 1


def _plots(page: str) -> list[str]:
    import re

    return re.findall(r"<svg.*?</svg>", page, re.S)


def test_the_report_page_shows_the_plots_in_its_language(client, analyst, rated, settings):
    """The Chinese page's plots speak Chinese, the English page's English; a report stored before the plots were
    drawn per language ({name: svg}) still shows its (English) plots."""
    client.force_login(analyst)
    url = reverse("campaign-report", args=[rated.pk])
    client.get(url)
    run_pending()
    english = _plots(client.get(url).content.decode())
    assert len(english) == 4 and "Agreement among physicians per item" in english[0]
    assert not any("医师" in svg or "Noto Sans CJK" in svg for svg in english)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    chinese = _plots(client.get(url).content.decode())
    assert len(chinese) == 4 and "各条目的医师间一致性" in chinese[0]
    assert not any("Agreement" in svg or "Mean score" in svg or "binary items" in svg for svg in chinese)

    job = Job.objects.get(kind="campaign_report", params__names=False, status=Job.Status.SUCCEEDED)
    Job.objects.filter(pk=job.pk).update(result={**job.result, "plots": job.result["plots"]["en"]})
    old = _plots(client.get(url).content.decode())
    assert len(old) == 4 and "Agreement among physicians per item" in old[0]


def test_coordinator_sees_names_and_can_allow_them_for_analysts(client, coordinator, analyst, rated):
    client.force_login(coordinator)
    client.get(reverse("campaign-report", args=[rated.pk]))
    run_pending()
    assert "doc0" in client.get(reverse("campaign-report", args=[rated.pk])).content.decode()
    client.post(reverse("campaign-allow-names", args=[rated.pk]))
    rated.refresh_from_db()
    assert rated.allow_names
    client.force_login(analyst)
    client.get(reverse("campaign-report", args=[rated.pk]))
    run_pending()
    assert "doc0" in client.get(reverse("campaign-report", args=[rated.pk])).content.decode()


def test_downloads(client, analyst, rated):
    client.force_login(analyst)
    assert client.get(reverse("campaign-report-download", args=[rated.pk])).status_code == 202  # being prepared
    client.get(reverse("campaign-report", args=[rated.pk]))
    run_pending()
    report = client.get(reverse("campaign-report-download", args=[rated.pk]))
    assert report.status_code == 200 and "attachment" in report["Content-Disposition"]
    body = report.content.decode()
    assert "<style>" in body and "Methods" in body and "<svg" in body and "/static/" not in body
    response = client.get(reverse("campaign-export", args=[rated.pk, "csv"]))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == 6 * 3 * 24 and set(rows[0]) >= {"dialogue_id", "rater", "item", "value"}
    assert all(row["rater"].startswith("R") for row in rows)
    for fmt in ("json", "xlsx", "sav"):
        response = client.get(reverse("campaign-export", args=[rated.pk, fmt]))
        content = b"".join(response.streaming_content) if response.streaming else response.content
        assert response.status_code == 200 and len(content) > 100, fmt
    assert client.get(reverse("campaign-export", args=[rated.pk, "exe"])).status_code == 404


def test_physician_cannot_read_reports_or_exports(client, rated):
    from django.contrib.auth import get_user_model

    physician = get_user_model().objects.get(username="doc0")
    client.force_login(physician)
    assert client.get(reverse("campaign-report", args=[rated.pk])).status_code == 403
    assert client.get(reverse("campaign-export", args=[rated.pk, "csv"])).status_code == 403


@pytest.mark.integration
def test_report_is_computed_by_a_real_worker(client, celery_worker, make_user, analyst):
    raters = [make_user(f"w{i}", "physician") for i in range(2)]
    campaign = campaign_with(raters, n=4, overlap=2, name="Worker report")
    rate_everything(campaign, random.Random(2))
    client.force_login(analyst)
    client.get(reverse("campaign-report", args=[campaign.pk]))
    job = Job.objects.get(kind="campaign_report", params__names=False)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not Job.objects.get(pk=job.pk).is_finished:
        time.sleep(0.5)
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    html = client.get(reverse("campaign-report", args=[campaign.pk])).content.decode()
    assert 'data-testid="item-agreement"' in html


def test_cli_prints_the_same_figures_as_the_browser_report(client, analyst, rated):
    import json as jsonlib

    from django.core.management import call_command

    client.force_login(analyst)
    client.get(reverse("campaign-report", args=[rated.pk]))
    run_pending()
    browser = Job.objects.get(kind="campaign_report", params__names=False).result
    out = io.StringIO()
    call_command("agreement", corpus=rated.corpus.name, campaign=rated.name, format="json", stdout=out)
    cli = jsonlib.loads(out.getvalue())
    for key in ("items", "icc", "reliability", "models", "rater_matrix", "n_labels"):
        assert cli[key] == browser[key], key
    out = io.StringIO()
    call_command("agreement", corpus=rated.corpus.name, format="csv", stdout=out)
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    assert rows[0][:4] == ["section", "scope", "statistic", "value"]
    kappa_21 = next(r for r in rows if r[1] == "2.1" and r[2] == "Fleiss kappa")
    item = next(i for i in browser["items"] if i["code"] == "2.1")
    assert float(kappa_21[3]) == pytest.approx(item["fleiss_kappa"]["value"])


def test_cli_errors_are_clear(db):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="No corpus"):
        call_command("agreement", corpus="nope")


def test_report_api(analyst, physician, rated):
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(physician)
    assert api.get(f"/api/campaigns/{rated.pk}/report/").status_code == 403
    api.force_authenticate(analyst)
    pending = api.get(f"/api/campaigns/{rated.pk}/report/")
    assert pending.status_code == 202 and pending.json()["status"] == "queued"
    run_pending()
    ready = api.get(f"/api/campaigns/{rated.pk}/report/").json()
    assert ready["n_labels"] == 6 * 3 * 24 and "plots" not in ready
    # the plots as ever: {name: svg}, in English whatever the reader's language (the page draws its own)
    plotted = api.get(f"/api/campaigns/{rated.pk}/report/", {"plots": "1"}, HTTP_ACCEPT_LANGUAGE="zh-hans").json()
    assert set(plotted["plots"]) == {"item_agreement", "rater_heatmap", "model_scores", "criterion_means"}
    assert "Agreement among physicians per item" in plotted["plots"]["item_agreement"]
    assert api.get("/api/campaigns/999999/report/").status_code == 404


def test_interval_and_correlation_options(client, analyst, rated):
    """BCa intervals and tetrachoric correlations are chosen per report (page, download, API) and named."""
    from rest_framework.test import APIClient

    client.force_login(analyst)
    url = reverse("campaign-report", args=[rated.pk])
    client.get(url)
    client.get(url, {"ci": "bca", "correlation": "tetrachoric"})
    assert Job.objects.filter(kind="campaign_report", params__names=False).count() == 2  # one report per choice
    run_pending()
    html = client.get(url, {"ci": "bca", "correlation": "tetrachoric"}).content.decode()
    assert "BCa" in html and "ordinal alpha" in html and "tetrachoric" in html
    assert "cluster bootstrap over dialogues" in html and 'data-testid="reliability-per-rater"' in html
    assert "fewer than about 30" in html  # six dialogues
    assert "ci=bca&amp;correlation=tetrachoric" in html  # the download keeps the choice
    plain = client.get(url).content.decode()
    assert "Pearson (phi)" in plain and "KR-20" in plain and 'data-testid="icc-left-out"' not in plain
    download = client.get(reverse("campaign-report-download", args=[rated.pk]), {"ci": "bca"})
    assert download.status_code == 202  # bca with Pearson is a third report, not computed yet: being prepared
    api = APIClient()
    api.force_authenticate(analyst)
    ready = api.get(f"/api/campaigns/{rated.pk}/report/", {"ci": "bca", "correlation": "tetrachoric"})
    assert ready.status_code == 200 and ready.json()["ci_method"] == "bca"
    bad = api.get(f"/api/campaigns/{rated.pk}/report/", {"ci": "normal"})
    assert bad.status_code == 400  # checked against the schema, with the allowed values named
    assert bad.json()["detail"] == 'Query parameter "ci" must be one of: bca, percentile; got \'normal\'.'
