"""The figures a locked preference study's page shows before unblinding (position bias and agreement, naming no
source), as stored figures (:mod:`scoring.jobs.figures`): a worker computes them when the study is locked or its
votes change, versioned by the study's inputs' fingerprint (:func:`scoring.preference.results.inputs_fingerprint`),
and the page shows the latest stored ones at once, marked "updating" while newer ones are computed.
``scoring.preference.analysis`` (pandas, scipy) is imported only by the job (a module of its own: ``results`` is
imported by the study services, which analysis imports)."""

from __future__ import annotations

from typing import Any

from scoring.jobs import figures
from scoring.jobs import services as jobs
from scoring.jobs.models import Job
from scoring.preference.models import PreferenceStudy
from scoring.preference.results import inputs_fingerprint


def subject(study: PreferenceStudy) -> dict[str, Any]:
    return {"study": study.pk, "blinded": True}


def blinded_figures(study: PreferenceStudy, user=None, *, start: bool = True) -> figures.Figures:
    """The stored figures before unblinding and the job computing newer ones (queued when they are older than the
    study's inputs and none is on the way)."""
    return figures.look(Job.Kind.PREFERENCE_BLINDED, subject(study), version_key="fingerprint",
                        version=inputs_fingerprint(study), project=study.project_id, user=user, start=start)


def refresh_blinded(study: PreferenceStudy) -> Job:
    """The study was locked or its votes changed: its figures before unblinding are computed again (debounced)."""
    return figures.refresh(Job.Kind.PREFERENCE_BLINDED, subject(study), project=study.project_id)


def compute_now(study: PreferenceStudy) -> Job:
    """The figures computed in this process (the demo loader), unless stored for the current inputs."""
    found = blinded_figures(study, start=False)
    if found.fresh:
        return found.stored
    return figures.compute_now(Job.Kind.PREFERENCE_BLINDED, subject(study), project=study.project_id)


def preference_blinded(job: Job) -> dict[str, Any]:
    """The job's body (registered lazily in scoring/apps.py): ``analysis.blinded_summary`` of the study."""
    from scoring.preference import analysis  # pandas, scipy: on use

    study = PreferenceStudy.objects.get(pk=job.params["study"])
    figures.stamp(job, fingerprint=inputs_fingerprint(study))
    jobs.set_progress(job, 0.1, "reading the votes")
    result = figures.plain(analysis.blinded_summary(study))
    jobs.forget_superseded(job, same=("study", "blinded"), version="fingerprint")
    return result
