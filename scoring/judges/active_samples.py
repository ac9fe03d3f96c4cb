"""Active samples for a campaign: physicians label where the judge is unsure (:mod:`core.stats.active`).

A coordinator picks a finished judge run on the campaign's corpus whose answers carry an uncertainty
(:mod:`scoring.judges.uncertainty`), a budget (the expected number of dialogues physicians label), the uniform share
and the minimum probability; :func:`draw_for_campaign` turns the run's uncertainty into one number per dialogue
(the root mean square over the items it scored: the expected error size of the dialogue's overall score when the
items' errors are independent), into inclusion probabilities, and records the draw through
:func:`annotation.sampling.draw_active_sample` (the probabilities, the rule and the seed, audited). Dialogues the
judge gave no uncertainty get the campaign's median, so the rule never leaves one out.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from django.utils.translation import gettext, gettext_noop

from annotation import sampling
from annotation.campaigns import CampaignError
from annotation.models import Campaign, RandomSample
from core.stats import active, formatting
from scoring.judges import sources, uncertainty
from scoring.reports.sentences import put, said, warning, word

NO_UNCERTAINTY = gettext_noop("The judge run recorded no uncertainty on these dialogues (its endpoint returned no "
                              "log-probabilities, or it is not a per-item run): an active sample needs one.")


class NoUncertainty(CampaignError):
    """The judge run recorded no uncertainty on the dialogues."""


def dialogue_uncertainty(run, dialogue_ids: list[int]) -> tuple[np.ndarray, int]:
    """Per dialogue (in ``dialogue_ids`` order) the root mean square of the run's uncertainty over the items it
    scored, and how many dialogues had none (given the median of the others)."""
    frame, _ = uncertainty.uncertainty_frame(run)
    per = (frame.assign(square=frame["uncertainty"] ** 2).groupby("dialogue")["square"].mean() ** 0.5
           if len(frame) else None)
    values = np.array([float(per.get(pk, np.nan)) if per is not None else np.nan for pk in dialogue_ids])
    missing = int(np.isnan(values).sum())
    if missing == len(values):
        raise NoUncertainty(gettext(NO_UNCERTAINTY))
    values[np.isnan(values)] = float(np.nanmedian(values))
    return values, missing


def draw_for_campaign(campaign: Campaign, run, *, budget: float, uniform_share: float = active.UNIFORM_SHARE,
                      pi_min: float | None = None, seed: int | None = None, user=None) -> RandomSample:
    """Draw ``campaign``'s active sample from ``run``'s uncertainty (see the module docstring)."""
    if sources.is_jury(run) or run.corpus_id != campaign.corpus_id:
        raise CampaignError(gettext("Choose a judge run on the campaign's corpus."))
    ids = list(campaign.population().order_by("pk").values_list("pk", flat=True))
    if not ids:
        raise CampaignError(gettext("The campaign has no dialogues in scope to sample from."))
    if not 0 < float(budget) <= len(ids):
        raise CampaignError(gettext("The budget must be above 0 and at most the number of dialogues in scope "
                                    "(%(n)s).") % {"n": len(ids)})
    if pi_min is not None and not 0 < float(pi_min) <= float(budget) / len(ids):
        raise CampaignError(gettext("The minimum probability must be above 0 and at most the budget divided by the "
                                    "dialogues in scope (%(rate)s); else the budget cannot be met.")
                            % {"rate": formatting.short(float(budget) / len(ids))})
    values, missing = dialogue_uncertainty(run, ids)
    try:
        pi = active.sampling_probabilities(values, float(budget), uniform_share=float(uniform_share),
                                           pi_min=pi_min)
    except ValueError as exc:
        raise CampaignError(str(exc)) from exc
    bound = active.PI_MIN_FACTOR * float(budget) / len(ids) if pi_min is None else float(pi_min)
    rule: dict[str, Any] = {"budget": float(budget), "uniform_share": float(uniform_share), "pi_min": bound,
                            "run_id": run.pk, "basis": "root mean square of the judge's uncertainty over its items",
                            "without_uncertainty": missing}
    return sampling.draw_active_sample(campaign, {pk: float(p) for pk, p in zip(ids, pi, strict=True)}, rule=rule,
                                       seed=seed, user=user)


def minutes_per_dialogue(campaign: Campaign) -> float | None:
    """The median time physicians took per submitted dialogue of ``campaign`` (opened to submitted), in minutes;
    None when none is recorded."""
    from annotation.models import Assignment

    spans = [(done - start).total_seconds() / 60 for start, done in Assignment.objects.filter(
        campaign=campaign, status=Assignment.Status.SUBMITTED, started_at__isnull=False,
        submitted_at__isnull=False).values_list("started_at", "submitted_at") if done >= start]
    return float(np.median(spans)) if spans else None


def plan(run, pilot: Campaign, scores, scope_key: str, half_width: float) -> dict[str, Any]:
    """The planner's active figures for one score: per model the physician labels a ``half_width`` interval needs
    drawn uniformly and by the active rule (:func:`core.stats.active.sample_size`, from the pilot's labels and
    the run's uncertainty), and the physician hours the active rule saves at the pilot's minutes per dialogue."""
    out: dict[str, Any] = {"models": [], "minutes": None, "reason": None}
    if sources.is_jury(run):
        put(out, "reason", said(gettext_noop("Active plans follow one judge run's uncertainty; choose a run, not a "
                                             "jury.")))
        return out
    ids = [int(pk) for pk in scores.dialogue_ids]
    try:
        values, _ = dialogue_uncertainty(run, ids)
    except NoUncertainty:
        put(out, "reason", said(NO_UNCERTAINTY))
        return out
    out["minutes"] = minutes_per_dialogue(pilot)
    W = scores.W
    for model in scores.model_names:
        in_model = (scores.models == model) & np.isfinite(scores.judge[scope_key])
        labelled = in_model & np.isfinite(scores.physicians[scope_key])
        figures = active.sample_size(scores.physicians[scope_key][labelled], scores.judge[scope_key][labelled],
                                     values[labelled], values[in_model], half_width)
        saved = (figures["uniform"] - figures["active"]
                 if figures["uniform"] is not None and figures["active"] is not None else None)
        hours = saved * out["minutes"] / 60 if saved is not None and out["minutes"] is not None else None
        h = f"+/-{half_width:g}"
        if figures["uniform"] is None or figures["active"] is None:
            text = (said(UNREACHABLE_UNIFORM if figures["uniform"] is None else UNREACHABLE_ACTIVE, model=model, h=h,
                         n=int(in_model.sum()), units=word(W.units)) if figures["n_pilot"] >= 3
                    else said(gettext_noop("%(model)s: %(warning)s"), model=model,
                              warning=warning(figures["warnings"][0])))
        elif hours is not None:
            text = said(gettext_noop("%(model)s: %(h)s needs %(uniform)s %(rater)s-labelled %(unit)s(s) drawn "
                                     "uniformly, or %(active)s drawn by the active rule (%(saved)s fewer: %(hours)s "
                                     "%(rater)s hours at %(minutes)s minutes per %(unit)s)."),
                        model=model, h=h, uniform=figures["uniform"], active=figures["active"], saved=saved,
                        hours=f"{hours:.1f}", minutes=f"{out['minutes']:.1f}", rater=word(W.rater), unit=word(W.unit))
        else:
            text = said(gettext_noop("%(model)s: %(h)s needs %(uniform)s %(rater)s-labelled %(unit)s(s) drawn "
                                     "uniformly, or %(active)s drawn by the active rule (%(saved)s fewer; no time per "
                                     "%(unit)s recorded yet)."),
                        model=model, h=h, uniform=figures["uniform"], active=figures["active"], saved=saved,
                        rater=word(W.rater), unit=word(W.unit))
        row = {"model": model, **figures, "saved": saved, "hours_saved": hours}
        put(row, "text", text)
        out["models"].append(row)
    return out


UNREACHABLE_UNIFORM = gettext_noop("%(model)s: %(h)s is not reachable with the %(n)s %(units)s in scope (uniform "
                                   "sample).")
UNREACHABLE_ACTIVE = gettext_noop("%(model)s: %(h)s is not reachable with the %(n)s %(units)s in scope (active "
                                  "sample).")
