"""The sample-size planner's figures as stored figures (:mod:`core.jobs.figures`): a worker computes the plan
(:func:`scoring.judges.planner.plan_figures`: the pilot's scores and the PPI++ sample sizes, 1.7-2.5 s on a
2,680-dialogue study) and the planner partial shows the latest stored plan at once, marked "updating" while a newer
one is computed, instead of computing it on every view.

A plan's *subject* is what the coordinator chose: the run, the pilot campaign, the target campaign (or the corpus),
the score and the half-width, and :data:`PLANNER_VERSION`; its version (``key``) hashes the subject with what the
plan reads now (:func:`inputs`): the pilot's labels, the run's answers and the dialogues per doctor model in scope.
``scoring.judges.planner`` (pandas) is imported inside the functions.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from annotation.models import Campaign, Corpus
from core.jobs import figures
from core.jobs import services as jobs
from core.jobs.models import Job
from scoring.judges.figures import answers_fingerprint
from scoring.judges.models import JudgeRun

#: Raise when the plan's computation or layout changes: stored plans of older code are then not served.
PLANNER_VERSION = 2

#: What names one plan (the params every version of it shares).
SUBJECT = ("run", "pilot", "target", "corpus", "scope", "half_width", "version")


def subject(chosen: dict[str, Any], scope: str | None, half_width: float | None) -> dict[str, Any]:
    """The subject of the plan of :func:`scoring.judges.planner.choices`' ``chosen`` run and pilot (the half-width
    as text: a JSON number's equality is not the same in every database)."""
    target = chosen["target"]
    return {"run": chosen["run"].pk, "pilot": chosen["pilot"].pk, "target": target.pk if target else None,
            "corpus": chosen["corpus"].pk, "scope": scope,
            "half_width": None if half_width is None else repr(half_width),
            "version": PLANNER_VERSION}


def inputs(run: JudgeRun, pilot: Campaign, totals: dict[str, int]) -> dict[str, Any]:
    """What a plan reads now: the pilot's labels, the run's answers and the dialogues per model in scope."""
    from scoring.reports.fingerprint import study_fingerprint

    return {"labels": study_fingerprint([pilot]), "answers": answers_fingerprint(run), "totals": totals}


def key(params: dict[str, Any], now: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps({**params, **now}, sort_keys=True).encode()).hexdigest()[:32]


def plan_figures(chosen: dict[str, Any], user, *, scope: str | None = None, half_width: float | None = None,
                 start: bool = True) -> figures.Figures:
    """The stored plan for the choices (:func:`scoring.judges.planner.choices`, with a run and a pilot) and the job
    computing a newer one (:func:`core.jobs.figures.look`)."""
    params = subject(chosen, scope, half_width)
    now = inputs(chosen["run"], chosen["pilot"], chosen["totals"])
    return figures.look(Job.Kind.JUDGE_PLANNER, params, version_key="key", version=key(params, now),
                        project=chosen["run"].project_id, user=user, start=start)


def refresh(*, campaign: Campaign) -> list[Job]:
    """A campaign's labels changed: queue again, debounced, the plans computed before with it as the pilot."""
    seen = (Job.objects.filter(kind=Job.Kind.JUDGE_PLANNER, status=Job.Status.SUCCEEDED, params__pilot=campaign.pk,
                               params__version=PLANNER_VERSION)
            .exclude(result={}).order_by("-created_at").values_list("params", flat=True)[:10])
    subjects: list[dict[str, Any]] = []
    for params in seen:
        found = {name: params.get(name) for name in SUBJECT}
        if found not in subjects:
            subjects.append(found)
    return [figures.refresh(Job.Kind.JUDGE_PLANNER, params, project=campaign.project_id) for params in subjects]


@jobs.handler(Job.Kind.JUDGE_PLANNER)
def judge_planner(job: Job) -> dict[str, Any]:
    """The job's body: the plan of the job's run and pilot; an unknown score or a bad half-width is stored as the
    plan's error (the same choices would fail again)."""
    from scoring.judges.planner import PlannerError, _population
    from scoring.judges.planner import plan_figures as compute

    params = job.params
    run = JudgeRun.objects.select_related("config", "corpus").get(pk=params["run"])
    pilot = Campaign.objects.select_related("corpus", "scale_version").get(pk=params["pilot"])
    target = Campaign.objects.filter(pk=params["target"]).first() if params.get("target") else None
    corpus = Corpus.objects.get(pk=params["corpus"])
    now = inputs(run, pilot, _population(corpus, target))
    figures.stamp(job, key=key({name: params.get(name) for name in SUBJECT}, now))
    half_width = None if params.get("half_width") is None else float(params["half_width"])
    try:
        result = compute(run, pilot, now["totals"], scope=params.get("scope"), half_width=half_width)
    except PlannerError as exc:
        result = {"ready": False, "error": str(exc)}
    jobs.forget_superseded(job, same=SUBJECT[:-1], version="key")
    return figures.plain(result)
