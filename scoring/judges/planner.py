"""The sample-size planner where a coordinator sizes a campaign.

From a pilot -- a judge run and a campaign with physician labels on the same corpus and scale version, the labels
so far -- :func:`planner` says how many physician-labelled dialogues a chosen interval half-width needs, per doctor
model and for the difference of two models, with physicians alone and with the judge scoring every dialogue in
scope (:func:`scoring.judges.estimates.plan`, :func:`core.stats.ppi.sample_size`).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from django.utils.translation import gettext, gettext_lazy, gettext_noop

from annotation import sampling
from annotation.models import Assignment, Campaign, Corpus, ScaleVersion
from scoring.judges import active_samples, estimates
from scoring.judges.models import JudgeRun
from scoring.judges.report import run_scale_version_id
from scoring.reports.sentences import put, said


class PlannerError(ValueError):
    """A request the planner cannot answer (unknown score, half-width not positive...); the message says why."""


def runs_for(corpus: Corpus, version: ScaleVersion) -> list[JudgeRun]:
    """Finished judge runs on ``corpus`` whose prompts rate ``version``, newest first."""
    runs = JudgeRun.objects.filter(corpus=corpus, status=JudgeRun.Status.SUCCEEDED).select_related("config")
    return [run for run in runs.order_by("-pk") if run_scale_version_id(run) == version.pk]


def pilots_for(corpus: Corpus, version: ScaleVersion) -> list[Campaign]:
    """Campaigns on ``corpus`` and ``version`` with submitted physician labels, newest first."""
    ids = set(Assignment.objects.filter(campaign__corpus=corpus, campaign__scale_version=version,
                                        status=Assignment.Status.SUBMITTED).values_list("campaign_id", flat=True))
    return list(Campaign.objects.alive().filter(pk__in=ids).order_by("-created_at", "-pk"))


def default_version(corpus: Corpus) -> ScaleVersion | None:
    """The scale version of the newest campaign with physician labels on ``corpus`` (the planner's default before a
    version is chosen)."""
    campaign = (Campaign.objects.alive().filter(corpus=corpus, assignments__status=Assignment.Status.SUBMITTED)
                .select_related("scale_version").order_by("-created_at", "-pk").first())
    return campaign.scale_version if campaign else None


def _population(corpus: Corpus, target: Campaign | None) -> dict[str, int]:
    """Dialogues per doctor model the judge will score: the target campaign's population, else the corpus."""
    from annotation.models import PrivacyStatus

    qs = (target.population() if target is not None
          else corpus.dialogues.alive().exclude(privacy_status=PrivacyStatus.EXCLUDED))
    return dict(Counter(model or sampling.UNKNOWN_MODEL for model in qs.values_list("source_model", flat=True)))


def choices(*, corpus: Corpus, version: ScaleVersion, target: Campaign | None = None, run_id: int | None = None,
            pilot_id: int | None = None) -> dict[str, Any]:
    """The planner's cheap part, read in the request: the runs and pilots to choose from, the chosen ones and the
    dialogues per doctor model in scope (``totals``); ``reason`` when there is no run or pilot yet."""
    runs = runs_for(corpus, version)
    pilots = pilots_for(corpus, version)
    run = next((r for r in runs if r.pk == run_id), runs[0] if runs else None)
    default_pilot = target if target is not None and target in pilots else (pilots[0] if pilots else None)
    pilot = next((p for p in pilots if p.pk == pilot_id), default_pilot)
    out: dict[str, Any] = {"runs": runs, "pilots": pilots, "run": run, "pilot": pilot, "target": target,
                           "corpus": corpus, "version": version, "totals": _population(corpus, target),
                           "ready": False, "reason": None, "scopes": [], "scope": None, "half_width": None,
                           "plan": None}
    if run is None or pilot is None:
        out["reason"] = str(NEEDS_RUN_AND_LABELS if run is None and pilot is None else
                            NEEDS_RUN if run is None else NEEDS_LABELS)
    return out


NEEDS_RUN_AND_LABELS = gettext_lazy("The planner needs a pilot: a finished judge run on this corpus and scale version "
                                    "and physician labels on it (a pilot campaign). Run the judge on the corpus and "
                                    "let physicians label a few dozen dialogues first; then plan the full sample "
                                    "here.")
NEEDS_RUN = gettext_lazy("The planner needs a pilot: a finished judge run on this corpus and scale version. Run the "
                         "judge on the corpus and let physicians label a few dozen dialogues first; then plan the "
                         "full sample here.")
NEEDS_LABELS = gettext_lazy("The planner needs a pilot: physician labels on it (a pilot campaign). Run the judge on "
                            "the corpus and let physicians label a few dozen dialogues first; then plan the full "
                            "sample here.")


def check_half_width(half_width: float | None) -> None:
    if half_width is not None and not (half_width > 0 and math.isfinite(half_width)):
        raise PlannerError(gettext("The half-width must be a positive number."))


def plan_figures(run: JudgeRun, pilot: Campaign, totals: dict[str, int], *, scope: str | None = None,
                 half_width: float | None = None) -> dict[str, Any]:
    """The planner's maths (a worker's job, :mod:`scoring.judges.planner_figures`): the scores that can be planned
    and the plan for ``scope`` (default: the overall score) at ``half_width`` (default: 5% of the score's range),
    from the pilot's labels and the run's scores. ``ready`` is False, with ``reason``, when there is nothing to
    plan; PlannerError for an unknown score or a half-width that is not positive."""
    check_half_width(half_width)
    scores = estimates.load_scores(run, pilot)
    if not scores.scopes:
        out: dict[str, Any] = {"ready": False}
        put(out, "reason", said(gettext_noop("The judge run scored none of the scale's rated items: nothing to "
                                             "plan.")))
        return out
    keys = [s.key for s in scores.scopes]
    if scope is not None and scope not in keys:
        raise PlannerError(gettext("Unknown score %(scope)s; choose one of %(keys)s.")
                           % {"scope": repr(scope), "keys": ", ".join(keys)})
    chosen = scope or ("all" if "all" in keys else keys[0])
    result = estimates.plan(scores, scope=chosen, half_width=half_width, totals=totals)["scopes"][0]
    return {"ready": True, "reason": None, "scopes": [s.as_dict() for s in scores.scopes], "scope": chosen,
            "half_width": result["half_width"], "plan": result,
            "active": active_samples.plan(run, pilot, scores, chosen, result["half_width"])}


def planner(*, corpus: Corpus, version: ScaleVersion, target: Campaign | None = None, run_id: int | None = None,
            pilot_id: int | None = None, scope: str | None = None, half_width: float | None = None) -> dict[str, Any]:
    """Everything the planner partial shows, computed in this process (:func:`choices` and :func:`plan_figures`;
    the page reads the stored plan instead, :mod:`scoring.judges.planner_figures`). ``ready`` is False, with
    ``reason``, when there is no run or pilot yet."""
    out = choices(corpus=corpus, version=version, target=target, run_id=run_id, pilot_id=pilot_id)
    if out["reason"] is None:
        out.update(plan_figures(out["run"], out["pilot"], out["totals"], scope=scope, half_width=half_width))
    return out
