"""Campaign reports are computed by a worker (a background job registered here) and cached until the labels change.

``scoring.reports.agreement`` (pandas, scipy) is imported inside the functions: the API and the pages import this
module with the URLconf, and start-up should not wait for the statistics stack."""

from __future__ import annotations

from typing import Any

from annotation.models import Campaign
from scoring.jobs import services as jobs
from scoring.jobs.models import Job
from scoring.reports.exports import may_see_names


def names_allowed(user, campaign: Campaign) -> bool:
    """Coordinators and admins see names; analysts only where the coordinator allowed it."""
    return may_see_names(user, [campaign])


def report_options(params) -> dict[str, str]:
    """The analyst's choices for a report from query parameters: ``ci`` (percentile | bca) and ``correlation``
    (pearson | tetrachoric); unknown values fall back to the defaults."""
    from scoring.reports import agreement

    ci = params.get("ci", "percentile")
    correlation = params.get("correlation", "pearson")
    return {"ci_method": ci if ci in agreement.CI_METHODS else "percentile",
            "correlation": correlation if correlation in agreement.CORRELATIONS else "pearson"}


def current_report_job(campaign: Campaign, user, *, start: bool = True, retry: bool = False,
                       options: dict | None = None) -> Job | None:
    """The report job for the campaign's current labels and ``options`` (:func:`report_options`): a finished one
    if cached, else a running one, else the one that failed (its error is shown; the same labels would fail
    again). With ``start`` a new one is queued when there is none, or with ``retry`` when the last one failed."""
    params = _job_params(campaign, user, options)
    return jobs.current(Job.Kind.CAMPAIGN_REPORT, params, params, project=campaign.project_id, user=user, start=start,
                        retry=retry)


def _job_params(campaign: Campaign, user, options: dict | None) -> dict[str, Any]:
    from scoring.reports.agreement import study_fingerprint

    options = options or report_options({})
    return {"campaign": campaign.pk, "fingerprint": study_fingerprint([campaign]),
            "names": names_allowed(user, campaign), "ci_method": options["ci_method"],
            "correlation": options["correlation"]}


def compute_now(campaign: Campaign, user, options: dict | None = None) -> Job:
    """The report ``user`` would see with ``options``, computed in this process (the demo loader precomputes
    the finished demo campaign's report so that it shows at first login). An existing finished or running job
    for the same labels is returned as it is."""
    job = current_report_job(campaign, user, start=False, options=options)
    if job is not None and job.status != Job.Status.FAILED:
        return job
    job = Job.objects.create(kind=Job.Kind.CAMPAIGN_REPORT, params=_job_params(campaign, user, options),
                             requested_by=user, project_id=campaign.project_id)
    return jobs.execute(job.pk)


def last_failure(campaign: Campaign) -> Job | None:
    return (Job.objects.filter(kind=Job.Kind.CAMPAIGN_REPORT, params__campaign=campaign.pk, project=campaign.project_id,
                               status=Job.Status.FAILED).order_by("-created_at").first())


@jobs.handler(Job.Kind.CAMPAIGN_REPORT)
def campaign_report(job: Job) -> dict[str, Any]:
    """The job's body: load the campaign's labels and compute every section, reporting progress."""
    from scoring.reports import agreement

    campaign = Campaign.objects.get(pk=job.params["campaign"])
    study = agreement.load_study([campaign], names=job.params.get("names", False))
    jobs.set_progress(job, 0.05, "labels loaded")
    report = agreement.compute(study, progress=lambda fraction, message: jobs.set_progress(job, fraction, message),
                               ci_method=job.params.get("ci_method", "percentile"),
                               correlation=job.params.get("correlation", "pearson"))
    # Reports of the same campaign and options on older labels are never served again: drop their figures.
    jobs.forget_superseded(job, same=("campaign", "names", "ci_method", "correlation"), version="fingerprint")
    return report
