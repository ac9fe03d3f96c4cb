"""A preference study's results as stored figures, so that no page computes them: computed by a worker when the study is
unblinded, an item is left out or a judge run finishes, and shown at once by the results page
(:mod:`scoring.jobs.figures`). ``scoring.preference.analysis`` (pandas, scipy) is imported inside the functions: the
URLconf imports this module."""

from __future__ import annotations

import hashlib
from typing import Any

from django.db.models import Count, Max, Q

from scoring.jobs import figures
from scoring.jobs.models import Job
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
