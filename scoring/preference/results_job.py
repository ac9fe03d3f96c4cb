"""The job that computes a preference study's stored results (:mod:`scoring.preference.results`); registered by name in
scoring/apps.py, so the study services that queue it need not import the statistics stack."""

from __future__ import annotations

from typing import Any

from scoring.jobs import figures
from scoring.jobs import services as jobs
from scoring.jobs.models import Job
from scoring.preference import analysis, blinded
from scoring.preference.models import PreferenceStudy
from scoring.preference.results import DEFAULT_RESAMPLES, inputs_fingerprint, results_figures, subject


def compute_now(study: PreferenceStudy, n_resamples: int = DEFAULT_RESAMPLES) -> Job:
    """The results computed in this process (the demo loader), unless stored for the current inputs."""
    blinded.compute_now(study)  # the study page's figures too
    found = results_figures(study, n_resamples=n_resamples, start=False)
    if found.fresh:
        return found.stored
    return figures.compute_now(Job.Kind.PREFERENCE_RESULTS, subject(study, n_resamples), project=study.project_id)


def preference_results(job: Job) -> dict[str, Any]:
    """The job's body (registered lazily in scoring/apps.py): the full analysis of the study."""
    study = PreferenceStudy.objects.get(pk=job.params["study"])
    figures.stamp(job, fingerprint=inputs_fingerprint(study))
    jobs.set_progress(job, 0.05, "reading the votes")
    result = analysis.analysis(study, n_resamples=int(job.params.get("n_resamples") or DEFAULT_RESAMPLES))
    jobs.forget_superseded(job, same=("study", "n_resamples"), version="fingerprint")
    return figures.plain(result)
