"""`judge_report` and `agreement` print the figures the workers stored when they are current (nothing recomputed, no
statistics library imported) and compute them when they are stale or absent; the Django admin's lists of labels and
judge answers read a bounded number of queries whatever the number of rows."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation import labels
from annotation.models import Label
from scoring.judges import figures as judge_figures
from scoring.judges.models import JudgeResult
from scoring.judges.verdicts import VerdictSettings
from scoring.reports import figures as reports
from tests.test_judge_report import build_study


@pytest.fixture
def judged(db):
    labels._allowed.cache_clear()
    return build_study()  # three physicians rate six dialogues; a finished judge run with known answers


def refuse(*args, **kwargs):
    raise AssertionError("computed although a stored report is current")


def test_the_commands_modules_import_no_statistics_library():
    """What a command imports to read stored figures: none of the statistics stack (pandas, pingouin, statsmodels,
    scipy.stats, matplotlib), which it imports only when it computes."""
    code = ("import sys, scoring.management.commands.judge_report, scoring.management.commands.agreement\n"
            "import scoring.judges.figures, scoring.reports.figures, scoring.judges.selection_figures\n"
            "import scoring.judges.planner_figures\n"
            "heavy = ('pandas', 'pingouin', 'statsmodels', 'scipy.stats', 'matplotlib')\n"
            "heavy = [m for m in heavy if m in sys.modules]\n"
            "assert not heavy, heavy")
    env = {"SECRET_KEY": "x", "DJANGO_SETTINGS_MODULE": "config.settings", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", "import django; django.setup()\n" + code], capture_output=True,
                          text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_agreement_defaults_agree_with_the_report():
    from scoring.management.commands import agreement as command
    from scoring.reports import agreement

    assert command.N_RESAMPLES == agreement.N_RESAMPLES
    assert agreement.compute.__kwdefaults__["seed"] == command.SEED


def test_agreement_prints_the_stored_report_when_current_and_computes_when_stale(judged, monkeypatch):
    campaign, _run = judged
    computed_out = io.StringIO()
    call_command("agreement", corpus=campaign.corpus.name, campaign=campaign.name, stdout=computed_out)
    job = reports.compute_now(campaign, None, names=False)  # what the report worker stores
    monkeypatch.setattr("scoring.reports.agreement.compute", refuse)
    stored_out = io.StringIO()
    call_command("agreement", corpus=campaign.corpus.name, campaign=campaign.name, stdout=stored_out)
    assert json.loads(stored_out.getvalue()) == json.loads(computed_out.getvalue())
    assert "plots" not in json.loads(stored_out.getvalue()) and job.result["plots"]
    csv_out = io.StringIO()
    call_command("agreement", corpus=campaign.corpus.name, campaign=campaign.name, format="csv", stdout=csv_out)
    assert csv_out.getvalue().startswith("section,")
    # other options than the stored report's, --recompute, or newer labels: computed in the process
    for options in ({"seed": 7}, {"recompute": True}):
        with pytest.raises(AssertionError, match="computed although"):
            call_command("agreement", corpus=campaign.corpus.name, campaign=campaign.name, stdout=io.StringIO(),
                         **options)
    Label.objects.filter(campaign=campaign).update(updated_at=timezone.now() + timezone.timedelta(seconds=5))
    with pytest.raises(AssertionError, match="computed although"):
        call_command("agreement", corpus=campaign.corpus.name, campaign=campaign.name, stdout=io.StringIO())


def test_judge_report_prints_the_stored_report_when_current_and_computes_when_stale(judged, monkeypatch):
    campaign, run = judged
    verdict = VerdictSettings(min_dialogues=2)
    args = {"corpus": campaign.corpus.name, "judge": str(run.pk), "min_dialogues": 2}
    computed_out = io.StringIO()
    call_command("judge_report", stdout=computed_out, **args)
    job = judge_figures.compute_now(run, campaign, None, verdict, names=False)  # what the report worker stores
    monkeypatch.setattr("scoring.judges.report.judge_vs_physicians", refuse)
    stored_out = io.StringIO()
    call_command("judge_report", stdout=stored_out, **args)
    assert json.loads(stored_out.getvalue()) == json.loads(computed_out.getvalue()) == job.result
    csv_out = io.StringIO()
    call_command("judge_report", stdout=csv_out, format="csv", **args)
    assert csv_out.getvalue().startswith("section,scope,statistic")
    with pytest.raises(AssertionError, match="computed although"):  # other settings: another report
        call_command("judge_report", stdout=io.StringIO(), **{**args, "margin": 0.2})
    with pytest.raises(AssertionError, match="computed although"):
        call_command("judge_report", stdout=io.StringIO(), recompute=True, **args)
    # a judge answer changes: the stored report is stale and the command computes
    result = JudgeResult.objects.filter(run=run, status=JudgeResult.Status.DONE).first()
    JudgeResult.objects.filter(pk=result.pk).update(updated_at=timezone.now() + timezone.timedelta(seconds=5))
    with pytest.raises(AssertionError, match="computed although"):
        call_command("judge_report", stdout=io.StringIO(), **args)


@pytest.mark.parametrize("url_name,model", [("admin:annotation_label_changelist", Label),
                                            ("admin:scoring_judgeresult_changelist", JudgeResult)])
def test_the_admin_lists_of_labels_and_judge_answers_read_a_bounded_number_of_queries(judged, client, url_name,
                                                                                    model, admin_user):
    """No count of every row (a large study's label list counted 643,200 rows twice), one query for the page's rows
    with their relations (no query per row): the same number of queries for 3 rows as for a page of 100."""
    from django.urls import reverse

    client.force_login(admin_user)
    url = reverse(url_name)

    def queries() -> list[str]:
        with CaptureQueriesContext(connection) as ctx:
            response = client.get(url)
        assert response.status_code == 200
        return [q["sql"] for q in ctx.captured_queries]

    from django.contrib import admin

    model_admin = admin.site._registry[model]
    queries()  # the session's first request (the user, the project) apart
    page = queries()  # a page of 100 rows
    model_admin.list_per_page = 3
    try:
        three = queries()
    finally:
        del model_admin.list_per_page  # the class's own
    assert model.unscoped.count() > 100
    assert len(three) == len(page), "\n".join(page)
    table = model._meta.db_table
    counts = [q for q in page if "COUNT(" in q.upper() and f'"{table}"' in q]
    assert counts and all("LIMIT" in q.upper() for q in counts), counts  # capped, never every row
    assert not model_admin.show_full_result_count
