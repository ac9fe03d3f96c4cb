"""Campaign reports are computed by a worker (a background job registered here) when the labels change and stored;
pages show the latest stored report at once (:mod:`core.jobs.figures`).

``scoring.reports.agreement`` (pandas, scipy) is imported inside the functions: the API and the pages import this
module with the URLconf, and start-up should not wait for the statistics stack."""

from __future__ import annotations

from typing import Any

from annotation.models import Campaign
from core.jobs import figures
from core.jobs import services as jobs
from core.jobs.models import Job
from scoring.reports.exports import may_see_names


def names_allowed(user, campaign: Campaign) -> bool:
    """Coordinators and admins see names; analysts only where the coordinator allowed it."""
    return may_see_names(user, [campaign])


def report_options(params) -> dict[str, str]:
    """The analyst's choices for a report from query parameters: ``ci`` (percentile | bca) and ``correlation``
    (pearson | tetrachoric); unknown values fall back to the defaults."""
    from scoring.reports.fingerprint import CI_METHODS, CORRELATIONS

    ci = params.get("ci", "percentile")
    correlation = params.get("correlation", "pearson")
    return {"ci_method": ci if ci in CI_METHODS else "percentile",
            "correlation": correlation if correlation in CORRELATIONS else "pearson"}


def report_subject(campaign: Campaign, names: bool, options: dict | None = None) -> dict[str, Any]:
    """What names one campaign report (:mod:`core.jobs.figures`): the campaign, the name rule and the options;
    its version is the labels' fingerprint."""
    options = options or report_options({})
    return {"campaign": campaign.pk, "names": names, "ci_method": options["ci_method"],
            "correlation": options["correlation"]}


def report_figures(campaign: Campaign, user, *, options: dict | None = None, start: bool = True,
                   retry: bool = False, names: bool | None = None) -> figures.Figures:
    """The stored report ``user`` reads with ``options`` (``names`` given: with or without raters' names whoever
    asks), and the job computing a newer one (see :func:`core.jobs.figures.look`)."""
    from scoring.reports.fingerprint import study_fingerprint

    names = names_allowed(user, campaign) if names is None else names
    return figures.look(Job.Kind.CAMPAIGN_REPORT, report_subject(campaign, names, options),
                        version_key="fingerprint", version=study_fingerprint([campaign]),
                        project=campaign.project_id, user=user, start=start, retry=retry)


def current_report_job(campaign: Campaign, user, *, start: bool = True, retry: bool = False,
                       options: dict | None = None) -> Job | None:
    """The report job for the campaign's current labels and ``options`` (:func:`report_options`): a finished one
    if stored, else a queued or running one, else the one that failed (its error is shown; the same labels would
    fail again). With ``start`` a new one is queued when there is none, or with ``retry`` when the last one
    failed. For the API and the downloads, which never serve figures of older labels."""
    return report_figures(campaign, user, options=options, start=start, retry=retry).current_job


def refresh_reports(campaign: Campaign) -> list[Job]:
    """Labels of the campaign changed (submitted, returned, imported) or its name rule did: queue its reports to be
    computed once the changes stop (debounced), with the default options with names (coordinators) and without
    (analysts where the campaign hides names, and always the methods page and the study archive); and every other
    variant someone has read lately."""
    subjects = [report_subject(campaign, True), report_subject(campaign, False)]
    keys = ("campaign", "names", "ci_method", "correlation")
    seen = (Job.objects.filter(kind=Job.Kind.CAMPAIGN_REPORT, project=campaign.project_id,
                               params__campaign=campaign.pk, status=Job.Status.SUCCEEDED)
            .exclude(result={}).order_by("-created_at").values_list("params", flat=True)[:20])
    for params in seen:
        subject = {key: params.get(key) for key in keys}
        if subject not in subjects and (subject["names"] or not campaign.allow_names):
            subjects.append(subject)
    return [figures.refresh(Job.Kind.CAMPAIGN_REPORT, subject, project=campaign.project_id) for subject in subjects]


def compute_now(campaign: Campaign, user, options: dict | None = None, *, names: bool | None = None) -> Job:
    """The report ``user`` would see with ``options``, computed in this process (the demo loader precomputes
    the finished demo campaign's report so that it shows at first login). A finished job for the same labels is
    returned as it is. ``names=False``: the report without names, which the methods page and the study archive
    read whoever looks."""
    names = names_allowed(user, campaign) if names is None else names
    found = report_figures(campaign, user, options=options, start=False, names=names)
    if found.fresh:
        return found.stored
    subject = report_subject(campaign, names, options)
    return figures.compute_now(Job.Kind.CAMPAIGN_REPORT, subject, project=campaign.project_id, user=user)


def last_failure(campaign: Campaign) -> Job | None:
    return (Job.objects.filter(kind=Job.Kind.CAMPAIGN_REPORT, params__campaign=campaign.pk, project=campaign.project_id,
                               status=Job.Status.FAILED).order_by("-created_at").first())


@jobs.handler(Job.Kind.CAMPAIGN_REPORT)
def campaign_report(job: Job) -> dict[str, Any]:
    """The job's body: load the campaign's labels and compute every section, reporting progress."""
    from scoring.reports import agreement

    campaign = Campaign.objects.get(pk=job.params["campaign"])
    figures.stamp(job, fingerprint=agreement.study_fingerprint([campaign]))  # the labels it reads from now on
    study = agreement.load_study([campaign], names=job.params.get("names", False))
    jobs.set_progress(job, 0.05, "labels loaded")
    report = agreement.compute(study, progress=lambda fraction, message: jobs.set_progress(job, fraction, message),
                               ci_method=job.params.get("ci_method", "percentile"),
                               correlation=job.params.get("correlation", "pearson"))
    # Reports of the same campaign and options on older labels are never served again: drop their figures.
    jobs.forget_superseded(job, same=("campaign", "names", "ci_method", "correlation"), version="fingerprint")
    return report
