"""Downloads and API calls whose figures a worker has not stored yet for the current data compute nothing in the
request: they queue the worker's job and answer "being prepared" (a download: a page, 202, that fetches the file
again once the job has finished; the API: 202 with the job's progress and Retry-After, as the schema says), and the
file or figures once stored. One answer for every such download and API (scoring/reports/pending.py). Both modes."""

from __future__ import annotations

import random

import pytest
import yaml
from django.urls import reverse
from rest_framework.test import APIClient

from core.jobs.models import Job
from tests.factories import campaign_with
from tests.test_figures import run_due
from tests.test_reports import rate_everything


def refuse(*args, **kwargs):
    raise AssertionError("computed in the request")


@pytest.fixture
def rated(make_user):
    raters = [make_user(f"pend{i}", "physician") for i in range(3)]
    campaign = campaign_with(raters, n=6, overlap=3, name="Pending")
    rate_everything(campaign, random.Random(3))
    return campaign


def assert_preparing(response, job: Job) -> None:
    body = response.content.decode()
    assert response.status_code == 202 and int(response["Retry-After"]) >= 1
    assert 'data-testid="download-pending"' in body and "Preparing the file" in body
    assert reverse("figures-status", args=[job.pk]) in body  # follows the job, and reloads when it has finished
    assert "Content-Disposition" not in response


@pytest.mark.parametrize("what", ["methods.md", "methods.docx", "tripod-llm.md"])
def test_a_methods_download_waits_for_the_worker_instead_of_computing(client, coordinator, rated, monkeypatch, what):
    from studies import figures as methods_figures

    run_due()  # the campaign's reports are stored; the methods page's figures are not yet
    client.force_login(coordinator)
    url = reverse("study-archive-document", args=[what])
    with monkeypatch.context() as patched:
        patched.setattr(methods_figures, "compute_view", refuse)
        waiting = client.get(url)
        (job,) = Job.objects.filter(kind=Job.Kind.STUDY_METHODS, status=Job.Status.QUEUED)
        assert_preparing(waiting, job)
        assert client.get(url).status_code == 202  # asked again: the same job, not a second one
        assert Job.objects.filter(kind=Job.Kind.STUDY_METHODS).count() == 1
    run_due()  # a worker wrote the page's figures
    monkeypatch.setattr(methods_figures, "compute_view", refuse)
    ready = client.get(url)
    assert ready.status_code == 200 and f'filename="{what}"' in ready["Content-Disposition"]


def test_a_methods_download_whose_figures_failed_says_why(client, coordinator, rated, monkeypatch):
    from studies import figures as methods_figures

    run_due()
    client.force_login(coordinator)
    url = reverse("study-archive-document", args=["methods.md"])
    client.get(url)

    def broken(*args, **kwargs):
        raise RuntimeError("the provenance could not be read")

    monkeypatch.setattr(methods_figures, "compute_view", broken)
    with pytest.raises(RuntimeError):
        run_due()
    failed = client.get(url)
    body = failed.content.decode()
    assert failed.status_code == 409 and 'data-testid="download-failed"' in body
    assert "the provenance could not be read" in body and reverse("study-archive-methods") in body


def test_a_report_download_and_its_api_answer_the_same_way(client, analyst, rated):
    client.force_login(analyst)
    download = client.get(reverse("campaign-report-download", args=[rated.pk]))
    job = Job.objects.get(kind=Job.Kind.CAMPAIGN_REPORT, status=Job.Status.QUEUED, params__names=False)
    assert_preparing(download, job)
    assert reverse("campaign-report", args=[rated.pk]) in download.content.decode()  # the way back
    api = APIClient()
    api.force_authenticate(analyst)
    pending = api.get(f"/api/campaigns/{rated.pk}/report/")
    assert pending.status_code == 202 and int(pending["Retry-After"]) >= 1
    assert pending.json()["job"] == job.pk and pending.json()["status"] == "queued" and pending.json()["detail"]
    run_due()
    assert client.get(reverse("campaign-report-download", args=[rated.pk])).status_code == 200
    assert api.get(f"/api/campaigns/{rated.pk}/report/").status_code == 200


@pytest.fixture
def unblinded(coordinator, make_user):
    from scoring.preference import services as preference
    from tests.test_preference import answer_all, answers_jsonl, open_with

    study = preference.create_study(name="Unblinded", kind="answer", criteria="response", overlap=2, seed=5,
                                    user=coordinator)
    preference.import_answers(study, answers_jsonl(), coordinator)
    open_with(study, [make_user(f"unb{n}", "physician") for n in range(2)], coordinator)
    answer_all(study, lambda task, criterion, a, b: "A")
    preference.lock(study, coordinator)
    preference.unblind(study, coordinator, "analysis")
    Job.objects.filter(status=Job.Status.QUEUED).delete()  # as if the workers had not come to them yet
    return study


def test_the_preference_results_api_waits_for_the_worker(coordinator, unblinded, monkeypatch):
    from scoring.preference import analysis

    api = APIClient()
    api.force_authenticate(coordinator)
    url = f"/api/preference-studies/{unblinded.pk}/results/"
    with monkeypatch.context() as patched:
        patched.setattr(analysis, "analysis", refuse)
        pending = api.get(url, {"resamples": 200})
        assert pending.status_code == 202 and int(pending["Retry-After"]) >= 1
        job = Job.objects.get(pk=pending.json()["job"])
        assert job.kind == Job.Kind.PREFERENCE_RESULTS and job.params["n_resamples"] == 200
    run_due(Job.Kind.PREFERENCE_RESULTS)
    monkeypatch.setattr(analysis, "analysis", refuse)
    ready = api.get(url, {"resamples": 200})
    assert ready.status_code == 200 and ready.json()["n_resamples"] == 200 and ready.json()["sources"]


def test_the_preference_export_imports_no_statistics_library():
    """The answers' CSV is a plain read of the rows: the view's modules import neither pandas nor scipy."""
    import subprocess
    import sys

    code = ("import sys, django; django.setup()\n"
            "import scoring.preference.views, scoring.preference.api, scoring.preference.rows\n"
            "assert not {'pandas', 'scipy'} & set(sys.modules), 'imported'")
    env = {"SECRET_KEY": "x", "DJANGO_SETTINGS_MODULE": "config.settings", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_schema_documents_the_202_and_its_retry_after(physician):
    api = APIClient()
    api.force_authenticate(physician)
    paths = yaml.safe_load(api.get("/api/schema/").content)["paths"]
    for path in ("/api/campaigns/{id}/report/", "/api/preference-studies/{id}/results/",
                 "/api/judge-runs/{id}/report/"):
        answer = paths[path]["get"]["responses"]["202"]
        assert "Retry-After" in answer["headers"], path
        assert "Retry-After" in answer["description"]


def test_the_preparing_page_follows_its_job_and_says_when_the_file_is_ready(client, coordinator, rated):
    run_due()
    client.force_login(coordinator)
    url = reverse("study-archive-document", args=["methods.md"])
    client.get(url)
    (job,) = Job.objects.filter(kind=Job.Kind.STUDY_METHODS, status=Job.Status.QUEUED)
    status = reverse("figures-status", args=[job.pk])
    body = client.get(status, {"computing": 1, "file": url}).content.decode()
    assert 'data-testid="download-pending"' in body and "download-ready" not in body
    elsewhere = client.get(status, {"computing": 1, "file": "https://example.org/methods.md"}).content.decode()
    assert "example.org" not in elsewhere and "download-pending" not in elsewhere  # another site's: not followed
    run_due()
    ready = client.get(status, {"computing": 1, "file": url})
    body = ready.content.decode()
    assert ready.status_code == 200 and 'data-testid="download-ready"' in body and "The file is ready" in body
    assert f'data-download-now="{url}"' in body and "Computing" not in body  # the page fetches the file itself
