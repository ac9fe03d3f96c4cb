"""Figures computed when their inputs change, not when someone looks (core/jobs/figures.py):
a page shows the latest stored figures at once, marked "updating" while a newer job runs and "computing" only when
none exist yet; a burst of changes is one computation; the preference results page no longer computes per view."""

from __future__ import annotations

import random
import re
import time
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation import labels
from annotation.models import Assignment
from core.jobs import figures
from core.jobs import services as jobs
from core.jobs.models import Job
from tests.factories import answer_all, campaign_with
from tests.test_reports import rate_everything


def run_due(kind: str | None = None) -> list[int]:
    """What the workers do once the changes stopped: run every queued job (its quiet time taken as over)."""
    ran = []
    for job in Job.objects.filter(status=Job.Status.QUEUED, **({"kind": kind} if kind else {})).order_by("pk"):
        if "not_before" in job.params:
            past = (timezone.now() - timedelta(seconds=1)).isoformat()
            Job.objects.filter(pk=job.pk).update(params={**job.params, "not_before": past})
        jobs.execute(job.pk)
        ran.append(job.pk)
    return ran


def fingerprint(html: str) -> str:
    return re.search(r'data-testid="report-fingerprint">Data fingerprint <code>(\w+)</code>', html).group(1)


@pytest.fixture
def rated(make_user):
    raters = [make_user(f"fig{i}", "physician") for i in range(3)]
    campaign = campaign_with(raters, n=6, overlap=3, name="Figures")
    rate_everything(campaign, random.Random(3))
    return campaign


def test_submitted_labels_queue_the_report_before_anyone_looks(rated):
    queued = Job.objects.filter(kind=Job.Kind.CAMPAIGN_REPORT, status=Job.Status.QUEUED)
    # coordinators (names) and analysts (pseudonyms: the campaign does not allow names)
    assert sorted(job.params["names"] for job in queued) == [False, True]
    assert all("not_before" in job.params for job in queued)
    run_due()
    assert Job.objects.filter(kind=Job.Kind.CAMPAIGN_REPORT, status=Job.Status.SUCCEEDED).count() == 2


def test_a_report_page_after_a_change_shows_the_previous_figures_updating_then_the_new_ones(client, analyst, rated):
    run_due()
    client.force_login(analyst)
    url = reverse("campaign-report", args=[rated.pk])
    first = client.get(url).content.decode()
    assert 'data-testid="item-agreement"' in first and "Updating" not in first and "Computing" not in first
    before = fingerprint(first)
    labels.return_for_reannotation(Assignment.objects.filter(campaign=rated).first(), None, "recheck")
    during = client.get(url).content.decode()
    assert fingerprint(during) == before  # the stored figures, at once
    assert 'data-testid="figures-updating"' in during and "Updating" in during
    assert "Computing the report" not in during
    pending = Job.objects.get(kind=Job.Kind.CAMPAIGN_REPORT, status=Job.Status.QUEUED, params__names=False)
    poll = client.get(reverse("campaign-report-status", args=[rated.pk, pending.pk]), {"updating": 1})
    assert poll.status_code == 200 and "Updating" in poll.content.decode()
    run_due()
    assert client.get(reverse("campaign-report-status", args=[rated.pk, pending.pk]))["HX-Refresh"] == "true"
    after = client.get(url).content.decode()
    assert fingerprint(after) != before and "figures-updating" not in after
    # the page started nothing itself: the change did
    assert Job.objects.filter(kind=Job.Kind.CAMPAIGN_REPORT, params__names=False).count() == 2


def test_computing_shows_only_when_no_figures_exist_yet(client, analyst, make_user):
    raters = [make_user(f"new{i}", "physician") for i in range(2)]
    campaign = campaign_with(raters, n=3, overlap=2, name="Fresh")
    client.force_login(analyst)
    html = client.get(reverse("campaign-report", args=[campaign.pk])).content.decode()
    assert "Computing the report" in html and "figures-updating" not in html


def test_one_computation_per_burst_of_changes(rated, settings, monkeypatch):
    settings.FIGURES_DEBOUNCE_SECONDS = 60
    run_due()
    sent = []
    monkeypatch.setattr(jobs, "send", lambda job_id, countdown=None: sent.append((job_id, countdown)) or True)
    for assignment in Assignment.objects.filter(campaign=rated)[:5]:  # a burst of five changes
        labels.return_for_reannotation(assignment, None, "recheck")
    queued = Job.objects.filter(kind=Job.Kind.CAMPAIGN_REPORT, status=Job.Status.QUEUED)
    assert queued.count() == 2  # one per reader variant, not one per change
    job = queued.get(params__names=False)
    assert job.params["first_change"] < job.params["not_before"]
    # The message that arrives before the quiet time is over runs nothing and is sent again for later.
    jobs.execute(job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.QUEUED and job.attempts == 0
    computed = []
    real = figures.stamp
    monkeypatch.setattr(figures, "stamp", lambda job, **params: computed.append(job.pk) or real(job, **params))
    run_due()
    assert len(computed) == 2  # one computation per reader variant for the whole burst


def test_figures_queued_while_a_loader_computes_them_are_computed_once(make_user, monkeypatch,
                                                                       django_capture_on_commit_callbacks):
    """``load_demo`` (inside ``figures.computed_here``): the reports its labels queue wait for the loader, which
    takes them over, instead of a worker computing the same figures meanwhile; the reconciler leaves them alone;
    those the loader did not compute go to the workers at its end."""
    from scoring.reports.figures import compute_now

    sent = []
    monkeypatch.setattr(jobs, "send", lambda job_id, countdown=None: sent.append((job_id, countdown)) or True)
    raters = [make_user(f"held{i}", "physician") for i in range(3)]
    computed = []
    real = figures.stamp
    monkeypatch.setattr(figures, "stamp", lambda job, **params: computed.append(job.pk) or real(job, **params))
    with django_capture_on_commit_callbacks(execute=True), figures.computed_here():
        campaign = campaign_with(raters, n=6, overlap=3, name="Held")
        rate_everything(campaign, random.Random(4))
        queued = {job.params["names"]: job for job in Job.objects.filter(kind=Job.Kind.CAMPAIGN_REPORT,
                                                                         status=Job.Status.QUEUED)}
        assert sorted(queued) == [False, True]
        assert all(job.params["not_before"] > (timezone.now() + timedelta(minutes=9)).isoformat()
                   for job in queued.values())
        assert jobs.reconcile()["resent"] == []  # their messages are due only after the hold
        done = compute_now(campaign, None, names=True)
        assert done.pk == queued[True].pk and done.status == Job.Status.SUCCEEDED
    assert computed == [queued[True].pk]  # computed once, by the loader
    released = Job.objects.get(pk=queued[False].pk)
    assert released.status == Job.Status.QUEUED and "not_before" not in released.params
    assert sent[-1] == (released.pk, None)  # to the workers at once
    assert {countdown for _, countdown in sent[:-1]} == {figures.HOLD.total_seconds()}  # due after the hold


def test_a_steady_stream_of_changes_still_gets_figures_after_the_longest_wait(rated, settings):
    settings.FIGURES_DEBOUNCE_SECONDS = 20
    job = Job.objects.filter(kind=Job.Kind.CAMPAIGN_REPORT, status=Job.Status.QUEUED).first()
    first = timezone.now() - figures.MAX_WAIT + timedelta(seconds=5)
    Job.objects.filter(pk=job.pk).update(params={**job.params, "first_change": first.isoformat()})
    labels.return_for_reannotation(Assignment.objects.filter(campaign=rated).first(), None, "recheck")
    job.refresh_from_db()
    assert job.params["not_before"] <= (first + figures.MAX_WAIT).isoformat()


def test_a_run_that_finishes_queues_its_reports(judged_world):
    run, campaign = judged_world
    queued = Job.objects.filter(kind=Job.Kind.JUDGE_REPORT, status=Job.Status.QUEUED, params__run=run.pk,
                                params__campaign=campaign.pk)
    assert queued.exists()
    run_due(Job.Kind.JUDGE_REPORT)
    assert Job.objects.filter(kind=Job.Kind.JUDGE_REPORT, status=Job.Status.SUCCEEDED).exists()


@pytest.fixture
def judged_world(db):
    """A campaign rated by three physicians and a judge run on its corpus that the engine finishes."""
    from scoring.judges.models import JudgeResult, JudgeRun
    from scoring.judges.runs import HANDLER
    from tests.test_judge_report import build_study

    labels._allowed.cache_clear()
    campaign, run = build_study()
    run_due()  # the labels' reports
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.RUNNING)
    JudgeResult.objects.filter(run=run, status=JudgeResult.Status.PENDING).update(status=JudgeResult.Status.FAILED)
    assert HANDLER.maybe_finish(run.pk)  # its last answer is in
    return run, campaign


def test_judge_report_page_shows_stored_figures_while_updating(client, analyst, judged_world):
    run, campaign = judged_world
    run_due()
    client.force_login(analyst)
    url = reverse("judge-run-report", args=[run.pk]) + f"?campaign={campaign.pk}"
    html = client.get(url).content.decode()
    assert "judge-report-progress" not in html and "figures-updating" not in html
    labels.return_for_reannotation(Assignment.objects.filter(campaign=campaign).first(), None, "recheck")
    html = client.get(url).content.decode()
    assert 'data-testid="figures-updating"' in html and "judge-report-progress" not in html
    run_due()
    assert "figures-updating" not in client.get(url).content.decode()


# --- preference results ----------------------------------------------------------------------------------------
@pytest.fixture
def unblinded(db, coordinator, make_user):
    from scoring.preference import services as preference
    from tests.test_preference import answer_all, answers_jsonl

    study = preference.create_study(name="Stored results", kind="answer", criteria="response", overlap=2, seed=5,
                                    user=coordinator)
    preference.import_answers(study, answers_jsonl(), coordinator)
    for i in range(2):
        preference.add_rater(study, make_user(f"pref{i}", "physician"), added_by=coordinator)
    preference.open_study(study, coordinator)
    answer_all(study, lambda task, criterion, a, b: random.Random(task.pk).choice(["A", "B", "tie"]))
    preference.lock(study, coordinator)
    preference.unblind(study, coordinator, "analysis")
    return study


def test_preference_results_are_computed_on_unblinding_not_on_every_view(client, analyst, unblinded, monkeypatch):
    from scoring.preference import analysis

    queued = Job.objects.get(kind=Job.Kind.PREFERENCE_RESULTS, status=Job.Status.QUEUED)
    assert queued.params["study"] == unblinded.pk
    calls = []
    real = analysis.analysis
    monkeypatch.setattr(analysis, "analysis", lambda *a, **k: calls.append(1) or real(*a, **k))
    client.force_login(analyst)
    url = reverse("preference-results", args=[unblinded.pk])
    assert 'data-testid="figures-computing"' in client.get(url).content.decode()
    run_due()
    assert calls == [1]
    for _ in range(3):
        html = client.get(url).content.decode()
        assert 'data-testid="criterion-' in html and "figures-" not in html
    assert calls == [1]  # the views computed nothing
    api = client.get(f"/api/preference-studies/{unblinded.pk}/results/")
    assert api.status_code == 200 and calls == [1]  # the API serves the stored figures too


def test_preference_results_poll_refreshes_when_ready(client, analyst, unblinded):
    client.force_login(analyst)
    client.get(reverse("preference-results", args=[unblinded.pk]))
    job = Job.objects.get(kind=Job.Kind.PREFERENCE_RESULTS)
    poll = client.get(reverse("figures-status", args=[job.pk]), {"computing": 1})
    assert poll.status_code == 200 and "Computing" in poll.content.decode()
    run_due()
    assert client.get(reverse("figures-status", args=[job.pk]))["HX-Refresh"] == "true"


# --- Delphi rounds -----------------------------------------------------------------------------------------------
def test_delphi_round_statistics_are_stored_and_updated_on_completion(client, instrument, coordinator):
    from delphi import services
    from tests.test_delphi import answer_all, run_round_one

    study, rnd, parts = run_round_one(coordinator, familiarity=(5, 4, 3, 5))
    assert Job.objects.filter(kind=Job.Kind.DELPHI_ROUND, status=Job.Status.QUEUED).count() == 1  # one burst
    client.force_login(coordinator)
    url = reverse("delphi:round", args=[rnd.pk])
    first = client.get(url).content.decode()
    assert 'data-testid="figures-computing"' in first and "not met" not in first
    run_due(Job.Kind.DELPHI_ROUND)
    html = client.get(url).content.decode()
    assert "figures-" not in html and 'data-testid="kendall-w">W = ' in html
    study_page = client.get(reverse("delphi:study", args=[study.pk])).content.decode()
    assert "round-computing" not in study_page and "figures-updating" not in study_page
    # the last panelist completes: the stored figures show at once, marked updating
    services.invite(study, coordinator, text="Late <late@example.org>")
    late = rnd.participations.order_by("-pk").first()
    answer_all(late, 4)
    html = client.get(url).content.decode()
    assert 'data-testid="figures-updating"' in html and 'data-testid="kendall-w">W = ' in html
    assert "4 completed" in html
    run_due(Job.Kind.DELPHI_ROUND)
    html = client.get(url).content.decode()
    assert "figures-updating" not in html and "5 completed" in html


@pytest.mark.integration
def test_a_burst_is_computed_once_by_a_real_worker(client, celery_worker, make_user, analyst, settings):
    settings.FIGURES_DEBOUNCE_SECONDS = 5  # longer than any gap between two submissions of the burst, on a busy machine
    raters = [make_user(f"rw{i}", "physician") for i in range(2)]
    campaign = campaign_with(raters, n=4, overlap=2, name="Burst")
    rate_everything(campaign, random.Random(4))  # eight submissions: one burst
    client.force_login(analyst)
    url = reverse("campaign-report", args=[campaign.pk])
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and Job.objects.filter(kind=Job.Kind.CAMPAIGN_REPORT).exclude(
            status__in=[Job.Status.SUCCEEDED, Job.Status.FAILED]).exists():
        time.sleep(0.5)
    done = Job.objects.filter(kind=Job.Kind.CAMPAIGN_REPORT)
    assert done.count() == 2 and all(job.status == "succeeded" for job in done), [j.error for j in done]
    html = client.get(url).content.decode()
    assert 'data-testid="item-agreement"' in html and "figures-updating" not in html
    assert done.count() == 2


def test_a_batch_of_label_changes_tells_the_listeners_once_per_campaign_at_its_end(make_user):
    """The demo submits hundreds of assignments in one go (annotation.demo): inside ``labels_changes_batched`` each
    campaign's listeners hear of it once, at the end; nested batches send at the outer end; a failed batch sends
    nothing (its transaction is rolled back too); outside a batch every change is sent at once."""
    from annotation.signals import labels_changed, labels_changes_batched, send_labels_changed

    raters = [make_user(f"batch{i}", "physician") for i in range(2)]
    first, second = (campaign_with(raters, n=2, overlap=2, name=name) for name in ("B1", "B2"))
    heard: list[int] = []

    def listener(sender, campaign, **kwargs):
        heard.append(campaign.pk)

    labels_changed.connect(listener, weak=False, dispatch_uid="test-batch-listener")
    try:
        with labels_changes_batched():
            with labels_changes_batched():
                for assignment in Assignment.objects.filter(campaign__in=[first, second]).select_related("rater"):
                    answer_all(assignment, assignment.rater)
                    labels.submit(assignment, assignment.rater)
            assert heard == []
            send_labels_changed(first)
            assert heard == []
        assert sorted(heard) == sorted([first.pk, second.pk])
        assert Job.objects.filter(kind=Job.Kind.CAMPAIGN_REPORT, status=Job.Status.QUEUED).count() == 4

        heard.clear()
        with pytest.raises(RuntimeError), labels_changes_batched():
            send_labels_changed(first)
            raise RuntimeError("the bulk load failed")
        assert heard == []
        send_labels_changed(second)
        assert heard == [second.pk]
    finally:
        labels_changed.disconnect(dispatch_uid="test-batch-listener")
