"""Pages cost a few index lookups per view, not work that grows with the study (the slow pages
``bench/bench_pages.py`` found): the labels' change mark is read from indexes, the methods page is written from
digests and reports the workers kept, and a dialogue's review reads its labels by their assignments. Run in both
modes (embedded, and with DATABASE_URL for PostgreSQL)."""

from __future__ import annotations

import random
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotation import labels
from annotation.models import Assignment, Label
from scoring.reports.fingerprint import study_fingerprint
from tests.factories import campaign_with
from tests.test_figures import run_due
from tests.test_reports import rate_everything


@pytest.fixture
def rated(make_user):
    raters = [make_user(f"cost{i}", "physician") for i in range(3)]
    campaign = campaign_with(raters, n=6, overlap=3, name="Costs")
    rate_everything(campaign, random.Random(7))
    return campaign


def _methods_page(client) -> str:
    """The methods page without its per-request CSRF tokens."""
    html = client.get(reverse("study-archive-methods")).content.decode()
    return re.sub(r'("X-CSRFToken": "|name="csrfmiddlewaretoken" value=")[^"]+', r"\1", html)


def _plans(queries: list[str]) -> list[str]:
    """SQLite's query plan of each query (one text per query)."""
    plans = []
    with connection.cursor() as cursor:
        for sql in queries:
            cursor.execute("EXPLAIN QUERY PLAN " + sql)
            plans.append(" / ".join(str(row[-1]) for row in cursor.fetchall()))
    return plans


def test_the_labels_change_mark_is_read_from_indexes_not_counted(rated):
    with CaptureQueriesContext(connection) as ctx:
        before = study_fingerprint([rated])
    on_labels = [q["sql"] for q in ctx.captured_queries if '"annotation_label"' in q["sql"]]
    assert on_labels and not any("COUNT(" in sql.upper() for sql in on_labels), on_labels
    if connection.vendor == "sqlite":  # each an index seek: no label row read (PostgreSQL plans tiny tables apart)
        plans = _plans([q["sql"] for q in ctx.captured_queries])
        assert all("COVERING INDEX" in plan and "SCAN" not in plan for plan in plans), plans
    # ... and it still follows every change: a changed label, a new one, a return, a submission
    label = Label.objects.filter(campaign=rated).order_by("pk").first()
    Label.objects.filter(pk=label.pk).update(value=label.value, updated_at=timezone.now())
    changed = study_fingerprint([rated])
    assert changed != before
    assignment = Assignment.objects.get(pk=label.assignment_id)
    labels.return_for_reannotation(assignment, None, "check")
    returned = study_fingerprint([rated])
    assert returned != changed
    labels.save_label(assignment, label.item_id, label.value, assignment.rater)
    labels.submit(assignment, assignment.rater)
    assert study_fingerprint([rated]) not in (before, changed, returned)


def test_the_methods_page_reads_what_the_workers_kept(client, coordinator, rated, monkeypatch):
    from core.jobs.models import Job
    from studies import export, figure_rows, figures

    run_due()  # the workers computed the reports, and kept the labels' digest beside them
    client.force_login(coordinator)

    def computed_in_request(*args, **kwargs):
        raise AssertionError("the page computed its data in the request")

    with monkeypatch.context() as patched:  # the first view queues the page's job, and shows it computing
        patched.setattr(figures, "compute_view", computed_in_request)
        waiting = _methods_page(client)
    assert 'data-testid="figures-computing"' in waiting and 'data-testid="tripod"' not in waiting
    assert Job.objects.filter(kind=Job.Kind.STUDY_METHODS, status=Job.Status.QUEUED).count() == 1
    run_due()  # a worker wrote the page's data (from the digests the report workers kept)

    def streamed(rows):
        raise AssertionError("the page streamed every label to digest them")

    monkeypatch.setattr(figure_rows, "_multiset_digest", streamed)
    monkeypatch.setattr(figures, "compute_view", computed_in_request)
    first = _methods_page(client)
    assert 'data-testid="tripod"' in first and "figures-updating" not in first
    assert f"{Label.objects.filter(campaign=rated).count():,} labels by 3 " in first

    def counted(*args, **kwargs):
        raise AssertionError("the page counted the archive's rows again")

    monkeypatch.setattr(export, "export_counts", counted)
    with CaptureQueriesContext(connection) as ctx:
        again = _methods_page(client)
    assert again == first
    assert not [q for q in ctx.captured_queries if "COUNT(" in q["sql"].upper() and "annotation_label" in q["sql"]]
    for what in ("methods.md", "tripod-llm.md", "methods.docx"):
        assert client.get(reverse("study-archive-document", args=[what])).status_code == 200
    # a change of the data: the stored page is shown, marked updating, until a worker wrote the new one
    assignment = Assignment.objects.filter(campaign=rated).order_by("pk").first()
    labels.return_for_reannotation(assignment, coordinator, "check")
    updating = _methods_page(client)
    assert 'data-testid="figures-updating"' in updating and 'data-testid="tripod"' in updating
    monkeypatch.undo()
    run_due()
    fresh = _methods_page(client)
    assert fresh != first and "figures-updating" not in fresh and 'data-testid="tripod"' in fresh


def test_a_dialogue_review_reads_its_labels_by_their_assignments(client, coordinator, rated):
    dialogue_id = Assignment.objects.filter(campaign=rated).values_list("dialogue_id", flat=True).first()
    client.force_login(coordinator)
    url = reverse("campaign-dialogue", args=[rated.pk, dialogue_id])
    with CaptureQueriesContext(connection) as ctx:
        page = client.get(url)
    assert page.status_code == 200
    on_labels = [q["sql"] for q in ctx.captured_queries if 'FROM "annotation_label"' in q["sql"]]
    assert len(on_labels) == 1 and '"annotation_label"."assignment_id" IN' in on_labels[0], on_labels
    assert "annotation_campaign" not in on_labels[0].split("WHERE")[0]  # no join that steers SQLite to the campaign
    if connection.vendor == "sqlite":
        plan = _plans(on_labels)[0]
        assert "assignment" in plan and "campaign" not in plan, plan
    body = page.content.decode()
    for label in Label.objects.filter(campaign=rated, dialogue_id=dialogue_id).exclude(value=None)[:3]:
        assert label.item.code in body


def test_methods_docx_is_read_from_the_cache_until_a_label_changes(client, coordinator, rated, monkeypatch):
    from studies import methods

    run_due()
    client.force_login(coordinator)
    built = []
    real = methods.methods_docx

    def counting(view):
        built.append(view["mark"])
        return real(view)

    monkeypatch.setattr(methods, "methods_docx", counting)
    url = reverse("study-archive-document", args=["methods.docx"])
    assert client.get(url).status_code == 202  # the page's figures are a worker's: being prepared
    run_due()
    first = client.get(url)
    assert first.status_code == 200 and first["Content-Type"].endswith("wordprocessingml.document")
    again = client.get(url)
    assert len(built) == 1 and again.content == first.content  # the second download: from the cache
    label = Label.objects.filter(campaign=rated, value__isnull=False).order_by("pk").first()
    assignment = Assignment.objects.select_related("rater").get(pk=label.assignment_id)
    labels.return_for_reannotation(assignment, coordinator, "check")
    labels.save_label(assignment, label.item_id, label.value, assignment.rater)  # returned, saved again
    labels.submit(assignment, assignment.rater)
    run_due()  # the reports, which queue the methods page's figures
    run_due()
    assert client.get(url).status_code == 200
    assert len(built) == 2 and built[0] != built[1]  # a changed label: written anew, under a new mark


def test_a_locked_preference_study_computes_its_blinded_figures_once_per_change(client, coordinator, make_user,
                                                                                monkeypatch):
    """The figures before unblinding are a worker's: queued when the study is locked, shown "computing" until then
    and "updating" (the stored ones) while newer ones are computed; a view computes nothing."""
    from core.jobs.models import Job
    from scoring.preference import analysis
    from scoring.preference import services as preference
    from tests.test_preference import answer_all, answers_jsonl, open_with

    study = preference.create_study(name="Locked", kind="answer", criteria="response", overlap=2, seed=5,
                                    user=coordinator)
    preference.import_answers(study, answers_jsonl(), coordinator)
    open_with(study, [make_user(f"lock{n}", "physician") for n in range(2)], coordinator)
    answer_all(study, lambda task, criterion, a, b: "A")
    computed = []
    real = analysis.blinded_summary
    monkeypatch.setattr(analysis, "blinded_summary", lambda s: computed.append(s.pk) or real(s))
    preference.lock(study, coordinator)
    assert Job.objects.filter(kind=Job.Kind.PREFERENCE_BLINDED, status=Job.Status.QUEUED).count() == 1
    client.force_login(coordinator)
    url = reverse("preference-detail", args=[study.pk])
    waiting = client.get(url).content.decode()
    assert 'data-testid="figures-computing"' in waiting and "Before unblinding: figures" not in waiting
    assert computed == []  # nothing computed in the request
    run_due()
    first = client.get(url).content.decode()
    second = client.get(url).content.decode()
    assert "Before unblinding: figures that name no source" in first and "Before unblinding" in second
    assert "figures-updating" not in first
    assert computed == [study.pk]  # by the worker, once
    preference.unblind(study, coordinator, "done")  # the study changed: the stored figures are shown, updating
    updating = client.get(url).content.decode()
    assert 'data-testid="figures-updating"' in updating and "Before unblinding: figures" in updating
    assert len(computed) == 1
    run_due()
    assert len(computed) == 2  # by the worker
    assert "figures-updating" not in client.get(url).content.decode()
    assert len(computed) == 2  # so the page reads them


def test_the_judge_reports_modules_import_no_scipy_special():
    """The judge report page imports scoring.judges.report for its checks: scipy.special (0.5 s of imports, the
    page's first view) is imported when an interval is first computed, not with the module."""
    import subprocess
    import sys

    code = ("import sys, core.stats.ppi, scoring.judges.estimates\n"
            "assert 'scipy.special' not in sys.modules, 'imported'\n"
            "assert abs(core.stats.ppi.ndtri(0.975) - 1.959963984540054) < 1e-12")
    env = {"SECRET_KEY": "x", "DJANGO_SETTINGS_MODULE": "config.settings", "PATH": "/usr/bin:/bin"}
    setup = "import django; django.setup()\n"
    done = subprocess.run([sys.executable, "-c", setup + code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
