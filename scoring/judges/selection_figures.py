"""The judge selection as stored figures (:mod:`core.jobs.figures`): a worker computes a campaign's selection
table (:func:`scoring.judges.selection.judge_selection`, several seconds on a few hundred dialogues) when its inputs
change, and the page shows the latest stored table at once, marked "updating" while a newer one is computed.

A selection's *subject* is the campaign, the name rule (:func:`scoring.reports.exports.may_see_names`) and
:data:`SELECTION_VERSION`; its version (``key``) hashes the subject with what the table reads now
(:func:`inputs`): the campaign's labels (:func:`scoring.reports.fingerprint.study_fingerprint`), every candidate
run's answers (:func:`scoring.judges.figures.answers_fingerprint`), the saved juries and their members, and the
campaign's stored settings (:class:`~scoring.judges.models.SelectionSettings`: held-out share, seed, verdict
settings). The settings are stored, never taken from the request: a reader cannot make a worker (or the page)
compute a table per seed, and every reader sees the same table. ``scoring.judges.selection`` (pandas) is imported
inside the functions, as in :mod:`scoring.judges.figures`.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotation.models import Campaign
from core.jobs import figures
from core.jobs import services as jobs
from core.jobs.models import Job
from projects.models import AuditEvent
from scoring.judges.figures import answers_fingerprint
from scoring.judges.models import JudgeRun, Jury, SelectionSettings
from scoring.judges.verdicts import VerdictSettings
from scoring.reports.exports import may_see_names

#: Raise when the selection's computation or layout changes: stored tables of older code are then not served.
SELECTION_VERSION = 2

#: What names one selection (the params every version of it shares).
SUBJECT = ("campaign", "names", "version")

#: Bootstrap resamples of the stored table (the command may ask for another number and then computes in-process).
RESAMPLES = 1000


def settings_of(campaign: Campaign) -> SelectionSettings:
    """The campaign's stored selection settings; the defaults (unsaved) when none were ever set."""
    found = SelectionSettings.objects.filter(campaign=campaign).first()
    return found or SelectionSettings(campaign=campaign, project_id=campaign.project_id)


def verdict_of(stored: SelectionSettings):
    """The stored verdict settings as :class:`scoring.judges.verdicts.VerdictSettings`."""
    return VerdictSettings(**stored.verdict)


def save_settings(campaign: Campaign, user, *, held_out_share: float, seed: int, verdict: dict[str, Any],
                  reason: str = "") -> SelectionSettings:
    """Store the campaign's selection settings (``verdict``: floor, min_dialogues, margin, ci_method), checked as
    the computation checks them, with an audit entry of the settings before and after; ValueError with the reason
    when they are out of range. The page then finds its table older than the settings and a worker computes it."""
    if not 0.0 < held_out_share < 1.0:
        raise ValueError("The held-out share must be between 0 and 1 (e.g. 0.3).")
    if not 0 <= seed < 2**32:
        raise ValueError("The seed must be a whole number from 0 to 4294967295.")
    verdict = {key: verdict[key] for key in ("floor", "min_dialogues", "margin", "ci_method") if key in verdict}
    VerdictSettings(**verdict)  # raises ValueError with the reason
    with transaction.atomic():
        stored = SelectionSettings.objects.select_for_update().filter(campaign=campaign).first() \
            or SelectionSettings(campaign=campaign, project_id=campaign.project_id)
        before = stored.as_dict() if stored.pk else None
        stored.held_out_share, stored.seed, stored.verdict = float(held_out_share), int(seed), verdict
        stored.updated_by = user if getattr(user, "is_authenticated", False) else None
        stored.updated_at = timezone.now()
        if before == stored.as_dict():
            return stored
        stored.save()
        AuditEvent.record(user, "selection_settings", campaign, reason=reason, before=before,
                          after=stored.as_dict())
    return stored


def candidate_runs(campaign: Campaign) -> list[JudgeRun]:
    """The finished runs the selection puts side by side: on the campaign's corpus and instrument (as
    :func:`scoring.judges.selection.load_candidates` reads them, without loading pandas in a web process)."""
    from scoring.judges.figures import comparable_campaigns

    runs = JudgeRun.objects.filter(corpus_id=campaign.corpus_id, status__in=JudgeRun.FINISHED) \
        .select_related("config").order_by("pk")
    return [run for run in runs if any(c.pk == campaign.pk for c in comparable_campaigns(run))]


def inputs(campaign: Campaign) -> dict[str, Any]:
    """What a selection reads now: the labels', the runs' and the juries' fingerprints and the stored settings."""
    from scoring.reports.fingerprint import study_fingerprint

    juries = Jury.objects.alive().filter(corpus_id=campaign.corpus_id, scale_version_id=campaign.scale_version_id)
    return {"labels": study_fingerprint([campaign]),
            "answers": {str(run.pk): answers_fingerprint(run) for run in candidate_runs(campaign)},
            "juries": {str(jury.pk): [run.pk for run in jury.member_runs()] for jury in juries.order_by("pk")},
            "settings": settings_of(campaign).as_dict()}


def subject(campaign: Campaign, names: bool) -> dict[str, Any]:
    return {"campaign": campaign.pk, "names": names, "version": SELECTION_VERSION}


def key(params: dict[str, Any], now: dict[str, Any]) -> str:
    """The version of a selection's inputs now."""
    return hashlib.sha256(json.dumps({**params, **now}, sort_keys=True, default=str).encode()).hexdigest()[:32]


def selection_figures(campaign: Campaign, user, *, start: bool = True, retry: bool = False,
                      names: bool | None = None) -> figures.Figures:
    """The stored selection ``user`` reads (names as :func:`may_see_names` allows) and the job computing a newer one
    (:func:`core.jobs.figures.look`)."""
    names = may_see_names(user, [campaign]) if names is None else names
    params = subject(campaign, names)
    return figures.look(Job.Kind.JUDGE_SELECTION, params, version_key="key", version=key(params, inputs(campaign)),
                        project=campaign.project_id, user=user, start=start, retry=retry)


def compute_now(campaign: Campaign, user=None, *, names: bool | None = None) -> Job:
    """The selection ``user`` would see, computed in this process unless the stored one is current (returned as it
    is)."""
    names = may_see_names(user, [campaign]) if names is None else names
    found = selection_figures(campaign, user, start=False, names=names)
    if found.fresh:
        return found.stored
    return figures.compute_now(Job.Kind.JUDGE_SELECTION, subject(campaign, names), project=campaign.project_id,
                               user=user)


def refresh(*, campaign: Campaign | None = None, run: JudgeRun | None = None) -> list[Job]:
    """A campaign's labels changed (``campaign``) or a run finished (``run``): queue again, debounced
    (:func:`core.jobs.figures.refresh`), the selections someone has computed before on the campaign, or on the
    campaigns the run can be compared with. A campaign nobody opened the selection of costs the workers nothing."""
    if campaign is not None:
        ids = [campaign.pk]
    elif run is not None and run.status in JudgeRun.FINISHED:
        from scoring.judges.figures import comparable_campaigns

        ids = [c.pk for c in comparable_campaigns(run)]
    else:
        return []
    seen = (Job.objects.filter(kind=Job.Kind.JUDGE_SELECTION, status=Job.Status.SUCCEEDED,
                               params__campaign__in=ids, params__version=SELECTION_VERSION)
            .order_by("-created_at").values_list("project_id", "params")[:20])
    subjects: list[tuple[int, dict[str, Any]]] = []
    for project_id, params in seen:
        found = {name: params.get(name) for name in SUBJECT}
        if all(found != s for _, s in subjects):
            subjects.append((project_id, found))
    return [figures.refresh(Job.Kind.JUDGE_SELECTION, params, project=project_id) for project_id, params in subjects]


def selection_job(pk: int, campaign: Campaign) -> Job:
    """A selection job of this campaign (for the page's poll); Job.DoesNotExist otherwise."""
    return Job.objects.get(pk=pk, kind=Job.Kind.JUDGE_SELECTION, params__campaign=campaign.pk)


@jobs.handler(Job.Kind.JUDGE_SELECTION)
def judge_selection(job: Job) -> dict[str, Any]:
    """The job's body: the campaign's selection table with its stored settings, reporting progress; when there is
    nothing to choose from (no finished run), the reason is stored instead (the same inputs would fail again)."""
    from scoring.judges.figures import single_blas_thread
    from scoring.judges.selection import SelectionError
    from scoring.judges.selection import judge_selection as select

    params = job.params
    campaign = Campaign.objects.select_related("corpus", "scale_version").get(pk=params["campaign"])
    now = inputs(campaign)  # the inputs it reads from now on
    figures.stamp(job, key=key({name: params[name] for name in SUBJECT}, now))
    stored = settings_of(campaign)
    jobs.set_progress(job, 0.02, "loading labels and answers")
    try:
        with single_blas_thread():
            result = select(campaign, verdict=verdict_of(stored), held_out_share=stored.held_out_share,
                            seed=stored.seed, n_resamples=RESAMPLES, names=params.get("names", False),
                            progress=lambda fraction, message: jobs.set_progress(job, fraction, message))
    except SelectionError as exc:  # nothing to choose from yet: the page says why until the inputs change
        result = {"error": str(exc)}
    jobs.forget_superseded(job, same=SUBJECT[:-1], version="key")
    return figures.plain(result)
