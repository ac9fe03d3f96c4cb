"""A preference study's stored figures: its results, and the figures its page shows before unblinding.

The results (issue 34 item 1) are computed by a worker when the study is unblinded, an item is left out or a judge run
finishes, and shown at once by the results page (:mod:`core.jobs.figures`).
``scoring.preference.analysis`` (pandas, scipy) is imported inside the functions: the URLconf imports this module."""

from __future__ import annotations

import hashlib
from typing import Any

from django.db.models import Count, Max, Q

from core.jobs import figures
from core.jobs import services as jobs
from core.jobs.models import Job
from scoring.preference.models import (
    PreferenceAnswer,
    PreferenceItem,
    PreferenceJudgeRun,
    PreferenceStudy,
    PreferenceTask,
    PreferenceVerdict,
)

#: Raise when the analysis changes: stored results of older code are then computed again.
RESULTS_VERSION = 1
DEFAULT_RESAMPLES = 1000


def inputs_fingerprint(study: PreferenceStudy) -> str:
    """Changes whenever the study's state, a submitted answer, a left-out item or a judge's verdict changes."""
    tasks = PreferenceTask.objects.filter(study=study).aggregate(
        n=Count("id", filter=Q(status=PreferenceTask.Status.SUBMITTED)), last=Max("updated_at"))
    answers = PreferenceAnswer.objects.filter(task__study=study).aggregate(n=Count("id"), last=Max("updated_at"))
    items = PreferenceItem.objects.filter(study=study).aggregate(gone=Count("id", filter=Q(deleted_at__isnull=False)))
    runs = PreferenceJudgeRun.objects.filter(study=study).aggregate(n=Count("id"), last=Max("finished_at"))
    verdicts = PreferenceVerdict.objects.filter(run__study=study).aggregate(n=Count("id"), last=Max("updated_at"))
    raw = (f"{study.pk}|{study.status}|{study.unblinded_at}|{study.seed}|{tasks}|{answers}|{items}|{runs}|"
           f"{verdicts}|{RESULTS_VERSION}")
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def subject(study: PreferenceStudy, n_resamples: int = DEFAULT_RESAMPLES) -> dict[str, Any]:
    return {"study": study.pk, "n_resamples": n_resamples}


def results_figures(study: PreferenceStudy, user=None, *, n_resamples: int = DEFAULT_RESAMPLES, start: bool = True,
                    retry: bool = False) -> figures.Figures:
    """The stored results with ``n_resamples`` bootstrap resamples and the job computing newer ones."""
    return figures.look(Job.Kind.PREFERENCE_RESULTS, subject(study, n_resamples), version_key="fingerprint",
                        version=inputs_fingerprint(study), project=study.project_id, user=user, start=start,
                        retry=retry)


def refresh_results(study: PreferenceStudy) -> list[Job]:
    """The study's inputs changed: queue its results (the default resamples, and any other count read lately) to
    be computed once the changes stop. Nothing before unblinding: results per source are sealed until then."""
    if not study.is_unblinded:
        return []
    counts = [DEFAULT_RESAMPLES]
    seen = (Job.objects.filter(kind=Job.Kind.PREFERENCE_RESULTS, project=study.project_id, params__study=study.pk,
                               status=Job.Status.SUCCEEDED).exclude(result={})
            .order_by("-created_at").values_list("params__n_resamples", flat=True)[:10])
    counts += [n for n in seen if n not in counts]
    return [figures.refresh(Job.Kind.PREFERENCE_RESULTS, subject(study, n), project=study.project_id)
            for n in counts]


def compute_now(study: PreferenceStudy, n_resamples: int = DEFAULT_RESAMPLES) -> Job:
    """The results computed in this process (the demo loader), unless stored for the current inputs."""
    compute_blinded_now(study)  # the study page's figures too
    found = results_figures(study, n_resamples=n_resamples, start=False)
    if found.fresh:
        return found.stored
    return figures.compute_now(Job.Kind.PREFERENCE_RESULTS, subject(study, n_resamples), project=study.project_id)


def preference_results(job: Job) -> dict[str, Any]:
    """The job's body (registered lazily in scoring/apps.py): the full analysis of the study."""
    from scoring.preference import analysis  # pandas, scipy: on use

    study = PreferenceStudy.objects.get(pk=job.params["study"])
    figures.stamp(job, fingerprint=inputs_fingerprint(study))
    jobs.set_progress(job, 0.05, "reading the votes")
    result = analysis.analysis(study, n_resamples=int(job.params.get("n_resamples") or DEFAULT_RESAMPLES))
    jobs.forget_superseded(job, same=("study", "n_resamples"), version="fingerprint")
    return figures.plain(result)


# The figures a locked study's page shows before unblinding (position bias and agreement, naming no source): a
# worker computes them when the study is locked or its votes change, versioned by the same inputs' fingerprint, and
# the page shows the latest stored ones at once, marked "updating" while newer ones are computed.


def blinded_subject(study: PreferenceStudy) -> dict[str, Any]:
    return {"study": study.pk, "blinded": True}


def blinded_figures(study: PreferenceStudy, user=None, *, start: bool = True) -> figures.Figures:
    """The stored figures before unblinding and the job computing newer ones (queued when they are older than the
    study's inputs and none is on the way)."""
    return figures.look(Job.Kind.PREFERENCE_BLINDED, blinded_subject(study), version_key="fingerprint",
                        version=inputs_fingerprint(study), project=study.project_id, user=user, start=start)


def refresh_blinded(study: PreferenceStudy) -> Job:
    """The study was locked or its votes changed: its figures before unblinding are computed again (debounced)."""
    return figures.refresh(Job.Kind.PREFERENCE_BLINDED, blinded_subject(study), project=study.project_id)


def compute_blinded_now(study: PreferenceStudy) -> Job:
    """The figures before unblinding computed in this process (the demo loader), unless stored for the current
    inputs."""
    found = blinded_figures(study, start=False)
    if found.fresh:
        return found.stored
    return figures.compute_now(Job.Kind.PREFERENCE_BLINDED, blinded_subject(study), project=study.project_id)


def preference_blinded(job: Job) -> dict[str, Any]:
    """The job's body (registered lazily in scoring/apps.py): ``analysis.blinded_summary`` of the study."""
    from scoring.preference import analysis  # pandas, scipy: on use

    study = PreferenceStudy.objects.get(pk=job.params["study"])
    figures.stamp(job, fingerprint=inputs_fingerprint(study))
    jobs.set_progress(job, 0.1, "reading the votes")
    result = figures.plain(analysis.blinded_summary(study))
    jobs.forget_superseded(job, same=("study", "blinded"), version="fingerprint")
    return result
