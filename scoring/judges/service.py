"""The judge-vs-physicians report as a background job (issue 26 item 5), cached like the campaign agreement report.

A report is one :class:`~scoring.jobs.models.Job` of kind ``judge_report`` whose ``params["key"]`` hashes
everything the report depends on:

* the run and the campaign;
* the physicians' labels: :func:`scoring.reports.agreement.study_fingerprint` (count and last change of the
  campaign's labels and assignments: a new, changed, submitted or returned label changes it);
* the judge's answers: :func:`answers_fingerprint` (count per status, the sum of the values and the last change
  of the run's results, and the run's status: a new answer, a retried or imported one changes it);
* the verdict settings (floor, minimum dialogues, margin, interval method);
* whether the reader may see the physicians' names (:func:`scoring.reports.exports.may_see_names`, the README's
  one rule): a coordinator and an analyst of a campaign without *Allow names* read different reports;
* :data:`REPORT_VERSION`, raised when the computation changes, so no report of older code is served.

The page, the downloads and the API look the job up by that key: finished, it is served as it is (no figure is
recomputed); otherwise one is queued for a worker and the page shows its progress. ``scoring.judges.report``
(pandas, scipy) is imported inside the functions: the URLconf imports this module and start-up should not wait
for the statistics stack.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from annotation.models import Campaign
from scoring.jobs import services as jobs
from scoring.jobs.models import Job
from scoring.judges.models import JudgeResult, JudgeRun
from scoring.reports.exports import may_see_names

#: Raise when the report's computation or layout changes: cached reports of older code are then not served.
REPORT_VERSION = 2


def answers_fingerprint(run: JudgeRun) -> str:
    """Changes whenever an answer of the run is added, changed, retried or imported, or the run changes status."""
    from django.db.models import Count, Max, Q, Sum

    counts = JudgeResult.objects.filter(run=run).order_by().aggregate(
        n=Count("id"), done=Count("id", filter=Q(status=JudgeResult.Status.DONE)),
        failed=Count("id", filter=Q(status=JudgeResult.Status.FAILED)),
        unscored=Count("id", filter=Q(status=JudgeResult.Status.UNSCORED)), values=Sum("value"),
        last=Max("updated_at"))
    raw = f"{run.pk}|{run.status}|{counts['n']}|{counts['done']}|{counts['failed']}|{counts['unscored']}|" \
          f"{counts['values']}|{counts['last']}"
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def report_params(run: JudgeRun, campaign: Campaign, user, verdict) -> dict[str, Any]:
    """What the report of ``run`` against ``campaign`` depends on for ``user`` with ``verdict`` settings, and the
    key that names it (see the module docstring)."""
    from scoring.reports.agreement import study_fingerprint

    params: dict[str, Any] = {"run": run.pk, "campaign": campaign.pk, "names": may_see_names(user, [campaign]),
                              "settings": verdict.as_dict(), "labels": study_fingerprint([campaign]),
                              "answers": answers_fingerprint(run), "version": REPORT_VERSION}
    params["key"] = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:32]
    return params


def current_report_job(run: JudgeRun, campaign: Campaign, user, verdict, *, start: bool = True,
                       retry: bool = False) -> Job | None:
    """The report job for the current labels, answers and settings: a finished one if cached, else a running one,
    else the one that failed (the same data would fail again). With ``start`` a new one is queued when there is
    none, or with ``retry`` when the last one failed."""
    params = report_params(run, campaign, user, verdict)
    return jobs.current(Job.Kind.JUDGE_REPORT, params, {"key": params["key"]}, project=run.project_id, user=user,
                        start=start, retry=retry)


def compute_now(run: JudgeRun, campaign: Campaign, user, verdict=None) -> Job:
    """The report ``user`` would see, computed in this process (the demo loader precomputes the demo run's report
    so that it shows at first login); a finished or running job for the same key is returned as it is."""
    from scoring.judges.report import VerdictSettings

    params = report_params(run, campaign, user, verdict or VerdictSettings())
    job = jobs.current(Job.Kind.JUDGE_REPORT, params, {"key": params["key"]}, project=run.project_id, start=False)
    if job is not None and job.status != Job.Status.FAILED:
        return job
    job = Job.objects.create(kind=Job.Kind.JUDGE_REPORT, params=params, requested_by=user, project_id=run.project_id)
    return jobs.execute(job.pk)


def report_job(pk: int, run_id: int) -> Job:
    """A judge report job of this run (for the progress poll; the caller found the run in the request's project);
    Job.DoesNotExist otherwise."""
    return Job.objects.get(pk=pk, kind=Job.Kind.JUDGE_REPORT, params__run=run_id)


@jobs.handler(Job.Kind.JUDGE_REPORT)
def judge_report(job: Job) -> dict[str, Any]:
    """The job's body: the report of the job's run against its campaign with its settings, reporting progress."""
    from scoring.judges.report import VerdictSettings, judge_vs_physicians

    params = job.params
    run = JudgeRun.objects.select_related("config", "corpus").get(pk=params["run"])
    campaign = Campaign.objects.select_related("corpus", "scale_version").get(pk=params["campaign"])
    jobs.set_progress(job, 0.02, "loading labels and answers")
    with single_blas_thread():
        report = judge_vs_physicians(run, campaign, verdict=VerdictSettings(**params["settings"]),
                                     names=params.get("names", False),
                                     progress=lambda fraction, message: jobs.set_progress(job, fraction, message))
    # Reports of the same run, campaign, settings and name rule on older labels, answers or code are never served
    # again: drop their figures.
    jobs.forget_superseded(job, same=("run", "campaign", "names", "settings"), version="key")
    return report


def single_blas_thread():
    """The report's matrix products on one BLAS thread. The workers share the machine's cores (the README's
    layout runs several worker processes on two cores); BLAS threads that wait for a busy core spin, so the same
    report took 3.5-5.8 s with two threads and 2.5-3.2 s with one on a machine where another process was busy
    (bench/bench_judge_report.py), and used half the CPU time."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")
