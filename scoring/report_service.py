"""Campaign reports are computed by a worker and cached until the labels change."""

from __future__ import annotations

from annotation.models import Campaign
from scoring import jobs
from scoring.exports import may_see_names
from scoring.models import Job
from scoring.reports import study_fingerprint


def names_allowed(user, campaign: Campaign) -> bool:
    """Coordinators and admins see names; analysts only where the coordinator allowed it."""
    return may_see_names(user, [campaign])


def current_report_job(campaign: Campaign, user, *, start: bool = True) -> Job | None:
    """The report job for the campaign's current labels: a finished one if cached, else a running one;
    with ``start`` a new one is queued when there is neither (or the last one failed)."""
    fingerprint = study_fingerprint([campaign])
    names = names_allowed(user, campaign)
    job = (Job.objects.filter(kind=Job.Kind.CAMPAIGN_REPORT, params__campaign=campaign.pk,
                              params__fingerprint=fingerprint, params__names=names)
           .exclude(status=Job.Status.FAILED).order_by("-created_at").first())
    if job is None and start:
        job = jobs.submit(Job.Kind.CAMPAIGN_REPORT, user=user, campaign=campaign.pk, fingerprint=fingerprint,
                          names=names)
    return job


def last_failure(campaign: Campaign) -> Job | None:
    return (Job.objects.filter(kind=Job.Kind.CAMPAIGN_REPORT, params__campaign=campaign.pk,
                               status=Job.Status.FAILED).order_by("-created_at").first())
