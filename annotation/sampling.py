"""Random samples of a campaign's dialogues, for the estimates that need one (prediction-powered inference).

A judge's scores on every dialogue can be corrected by its error on the dialogues physicians labelled only when
those dialogues are a random sample of the ones the judge scored. A coordinator therefore lets the campaign draw
its sample (:func:`draw_sample`), or, for imported labels, an analyst declares that they come from one
(:func:`declare_sample`, ``import_labels --random-sample``). Either is recorded once, with who and when, in a
:class:`~annotation.models.RandomSample`.

How a sample is drawn (:func:`draw`): the dialogues of the population, in ascending id order, each get the next
number of Python's Mersenne Twister seeded with the seed (``random.Random(seed).random()``, whose sequence Python
keeps the same across versions); the sample is the dialogues with the smallest numbers, overall or within each
doctor model (stratified). Stratified samples share the size equally among the models (equal allocation, best
for comparing them); a model with too few dialogues gives all it has and the rest is shared among the others; a
remainder goes to the larger models. The population and the seed are stored, so :func:`reproduce` draws the same
sample again.
"""

from __future__ import annotations

import random
import secrets
from collections import Counter
from collections.abc import Iterable, Sequence

from django.db import transaction
from django.utils.translation import gettext, gettext_lazy

from annotation.campaigns import CampaignError
from annotation.models import Assignment, Campaign, RandomSample
from projects.models import AuditEvent

UNKNOWN_MODEL = "(unknown model)"
MAX_SEED = 2**63 - 1
SIZE_RANGE = gettext_lazy("The sample size must be between 1 and %(population)s (the dialogues in scope).")


def allocate(strata: dict[str, int], size: int) -> dict[str, int]:
    """Equal allocation of ``size`` over strata of the given sizes (see the module docstring)."""
    if size > sum(strata.values()):
        raise ValueError(gettext("A sample of %(size)s is larger than the %(population)s dialogues it is drawn from.")
                         % {"size": size, "population": sum(strata.values())})
    order = sorted(strata, key=lambda name: (strata[name], name))
    out: dict[str, int] = {}
    left = size
    for i, name in enumerate(order):
        take = min(strata[name], left // (len(order) - i))
        out[name] = take
        left -= take
    return {name: out[name] for name in sorted(strata)}


def draw(population: Iterable[Sequence], size: int, seed: int, stratified: bool = False
         ) -> tuple[list[int], dict[str, dict[str, int]]]:
    """The sample (dialogue ids, ascending) of ``size`` from ``population`` ([(id, doctor model), ...]) with
    ``seed``, and per doctor model the population and sample sizes. Pure and reproducible."""
    frame = sorted((int(pk), str(model or UNKNOWN_MODEL)) for pk, model in population)
    if not 1 <= size <= len(frame):
        raise ValueError(SIZE_RANGE % {"population": len(frame)})
    rng = random.Random(seed)
    key = {pk: (rng.random(), pk) for pk, _ in frame}
    models = dict(frame)
    counts = Counter(models.values())
    if stratified:
        quota = allocate(dict(counts), size)
        chosen: list[int] = []
        for name in sorted(counts):
            group = sorted((pk for pk, m in frame if m == name), key=key.__getitem__)
            chosen += group[:quota[name]]
    else:
        chosen = sorted(models, key=key.__getitem__)[:size]
    taken = Counter(models[pk] for pk in chosen)
    strata = {name: {"population": counts[name], "sample": taken.get(name, 0)} for name in sorted(counts)}
    return sorted(chosen), strata


def draw_poisson(probabilities: dict[int, float], seed: int) -> list[int]:
    """An active (Poisson) sample: the dialogues in ascending id order each get the next number of
    ``random.Random(seed)`` and are in the sample when it is below their inclusion probability. Pure and
    reproducible; the sample's size varies around the sum of the probabilities."""
    rng = random.Random(seed)
    return [pk for pk in sorted(int(k) for k in probabilities) if rng.random() < float(probabilities[pk])]


def reproduce(sample: RandomSample) -> list[int]:
    """Draw a stored sample again from its population and seed (the same ids for a drawn sample)."""
    if sample.kind == RandomSample.Kind.ACTIVE:
        return draw_poisson({int(k): v for k, v in sample.probabilities.items()}, sample.seed)
    if sample.kind != RandomSample.Kind.DRAWN:
        raise ValueError(gettext("Only a drawn sample has a seed to reproduce it from."))
    return draw(sample.population, sample.size, sample.seed, sample.stratified)[0]


def inclusion_probabilities(sample: RandomSample | None) -> dict[int, float] | None:
    """Each dialogue's inclusion probability in an active sample (None for any other sample)."""
    if sample is None or sample.kind != RandomSample.Kind.ACTIVE:
        return None
    return {int(k): float(v) for k, v in sample.probabilities.items()}


def sample_of(campaign: Campaign) -> RandomSample | None:
    return RandomSample.objects.filter(campaign=campaign).select_related("created_by").first()


def _seed(seed: int | None) -> int:
    if seed is None:
        return secrets.randbelow(2**31)
    if not 0 <= int(seed) <= MAX_SEED:
        raise CampaignError(gettext("The seed must be a whole number from 0 to %(max)s.") % {"max": MAX_SEED})
    return int(seed)


@transaction.atomic
def draw_sample(campaign: Campaign, *, size: int, stratified: bool = False, seed: int | None = None,
                user=None) -> RandomSample:
    """Draw the campaign's random sample of ``size`` dialogues (its scope from then on) and record it.

    Refused once the campaign has assignments (the sample must come before anyone sees a dialogue, so that it
    cannot be chosen after the fact) or a sample, and for campaigns of imported labels (declare theirs on import).
    ``seed``: None draws a fresh one, recorded with the sample."""
    Campaign.objects.select_for_update().get(pk=campaign.pk)
    _check_can_draw(campaign)
    population = _population(campaign)
    if not 1 <= size <= len(population):
        raise CampaignError(SIZE_RANGE % {"population": len(population)})
    seed = _seed(seed)
    ids, strata = draw(population, size, seed, stratified)
    sample = RandomSample.objects.create(
        campaign=campaign, kind=RandomSample.Kind.DRAWN, size=size, seed=seed, stratified=stratified,
        population=population, dialogues=ids, strata=strata, created_by=user if getattr(user, "pk", None) else None)
    AuditEvent.record(user, "campaign.random_sample", campaign, size=size, seed=seed, stratified=stratified,
                      population=len(population))
    return sample


def _population(campaign: Campaign) -> list[list]:
    """The campaign's population as stored with a sample, refused when empty."""
    population = [[pk, model or UNKNOWN_MODEL] for pk, model in
                  campaign.population().order_by("pk").values_list("pk", "source_model")]
    if not population:
        raise CampaignError(gettext("The campaign has no dialogues in scope to sample from."))
    return population


def _check_can_draw(campaign: Campaign) -> None:
    existing = sample_of(campaign)
    if existing is not None:
        raise CampaignError(gettext("This campaign already has its random sample (%(size)s dialogues, %(date)s); a "
                                    "sample is drawn once.")
                            % {"size": existing.size, "date": f"{existing.created_at:%Y-%m-%d}"})
    if campaign.phase == Campaign.Phase.IMPORTED:
        raise CampaignError(gettext("Campaigns of imported labels do not draw samples; declare that imported labels "
                                    "come from a random sample on import (import_labels --random-sample)."))
    assigned = Assignment.objects.filter(campaign=campaign).count()
    if assigned:
        raise CampaignError(gettext("Draw the random sample before assigning: this campaign already has "
                                    "%(assigned)s assignment(s), so a sample drawn now would not decide which "
                                    "dialogues physicians rate.") % {"assigned": assigned})


@transaction.atomic
def draw_active_sample(campaign: Campaign, probabilities: dict[int, float], *, rule: dict, seed: int | None = None,
                       user=None) -> RandomSample:
    """Draw the campaign's active sample: each dialogue of its population independently with its own inclusion
    ``probabilities`` (computed by the caller from a judge's uncertainty, :mod:`scoring.judges.active_samples`),
    with ``seed`` (None: a fresh one), and record the probabilities, the ``rule`` and the seed, with an audit event
    that holds them. The same refusals as :func:`draw_sample`."""
    Campaign.objects.select_for_update().get(pk=campaign.pk)
    _check_can_draw(campaign)
    population = _population(campaign)
    ids_in_scope = {pk for pk, _ in population}
    pi = {int(pk): float(p) for pk, p in probabilities.items()}
    if set(pi) != ids_in_scope:
        raise CampaignError(gettext("Every dialogue in scope needs an inclusion probability: %(missing)s have none "
                                    "and %(outside)s are outside the scope.")
                            % {"missing": len(ids_in_scope - set(pi)), "outside": len(set(pi) - ids_in_scope)})
    if not all(0 < p <= 1 for p in pi.values()):
        raise CampaignError(gettext("Inclusion probabilities must be above 0 and at most 1."))
    seed = _seed(seed)
    ids = draw_poisson(pi, seed)
    if not ids:
        raise CampaignError(gettext("The draw selected no dialogue; raise the budget."))
    models = dict((pk, model) for pk, model in population)
    counts, taken = Counter(models.values()), Counter(models[pk] for pk in ids)
    strata = {name: {"population": counts[name], "sample": taken.get(name, 0)} for name in sorted(counts)}
    sample = RandomSample.objects.create(
        campaign=campaign, kind=RandomSample.Kind.ACTIVE, size=len(ids), seed=seed, stratified=False,
        population=population, dialogues=ids, strata=strata, probabilities={str(k): v for k, v in sorted(pi.items())},
        rule=rule, created_by=user if getattr(user, "pk", None) else None)
    AuditEvent.record(user, "campaign.active_sample", campaign, seed=seed, size=len(ids), population=len(population),
                      rule=rule, probabilities=sample.probabilities)
    return sample


@transaction.atomic
def declare_sample(campaign: Campaign, dialogue_ids: Iterable[int], *, user=None, note: str = "") -> RandomSample:
    """Record that the labels of ``dialogue_ids`` (imported into ``campaign``) come from a random sample of the
    campaign's population; a later declaration on the same campaign adds its dialogues to the sample."""
    Campaign.objects.select_for_update().get(pk=campaign.pk)
    ids = sorted({int(pk) for pk in dialogue_ids})
    population = [[pk, model or UNKNOWN_MODEL] for pk, model in
                  campaign.population().order_by("pk").values_list("pk", "source_model")]
    existing = sample_of(campaign)
    if existing is not None and existing.kind in (RandomSample.Kind.DRAWN, RandomSample.Kind.ACTIVE):
        raise CampaignError(gettext("This campaign drew its own random sample; imported labels cannot be declared "
                                    "one."))
    if existing is not None:
        ids = sorted(set(existing.dialogues) | set(ids))
        population = sorted({tuple(p) for p in existing.population} | {tuple(p) for p in population})
        population = [list(p) for p in population]
        note = "\n".join(n for n in (existing.note, note) if n)
    models = {pk: model for pk, model in population}
    counts = Counter(models.values())
    taken = Counter(models.get(pk, UNKNOWN_MODEL) for pk in ids)
    strata = {name: {"population": counts[name], "sample": taken.get(name, 0)} for name in sorted(counts)}
    fields = {"kind": RandomSample.Kind.DECLARED, "size": len(ids), "seed": None, "stratified": False,
              "population": population, "dialogues": ids, "strata": strata, "note": note}
    if existing is None:
        sample = RandomSample.objects.create(campaign=campaign, created_by=user if getattr(user, "pk", None) else None,
                                             **fields)
    else:
        for name, value in fields.items():
            setattr(existing, name, value)
        existing.save()
        sample = existing
    AuditEvent.record(user, "campaign.random_sample_declared", campaign, reason=note, dialogues=len(ids),
                      population=len(population))
    return sample


def _nouns(unit: str, model: str) -> tuple[str, str, str]:
    """``unit``'s singular and plural and ``model`` in the active language (as written for other words)."""
    units = {"dialogue": (gettext("dialogue"), gettext("dialogues")), "answer": (gettext("answer"), gettext("answers"))}
    models = {"doctor model": gettext("doctor model"), "model": gettext("model")}
    one, many = units.get(unit, (unit, f"{unit}s"))
    return one, many, models.get(model, model)


def describe(sample: RandomSample | None, unit: str = "dialogue", model: str = "doctor model") -> str:
    """The sample in one sentence, for pages and reports (in the active language: a job's report in English);
    ``unit`` and ``model`` name what the instrument rates ("answer", "model" for an instrument on answers)."""
    unit, units, model = _nouns(unit, model)
    if sample is None:
        return gettext("No random sample: the %(units)s were assigned by hand (every %(unit)s in scope, or a "
                       "coordinator's choice).") % {"units": units, "unit": unit}
    who = sample.created_by.username if sample.created_by else gettext("the system")
    when = f"{sample.created_at:%Y-%m-%d}"
    if sample.kind == RandomSample.Kind.ACTIVE:
        rule = sample.rule or {}
        unrecorded = gettext("not recorded")

        def figure(key: str) -> str:
            value = rule.get(key)
            return f"{value:.3g}" if isinstance(value, int | float) else unrecorded

        run = f"#{rule['run_id']}" if rule.get("run_id") else unrecorded
        return gettext(
            "An active sample: %(size)s of the %(population)s %(units)s in scope, each drawn independently with its "
            "own probability (budget %(budget)s, uniform share %(share)s, minimum probability %(pi_min)s, following "
            "the uncertainty of judge run %(run)s), seed %(seed)s, by %(who)s on %(when)s; anyone can draw it again "
            "from the stored probabilities and the seed.") % {
            "size": sample.size, "population": len(sample.population), "units": units, "budget": figure("budget"),
            "share": figure("uniform_share"), "pi_min": figure("pi_min"), "run": run, "seed": sample.seed,
            "who": who, "when": when}
    if sample.kind == RandomSample.Kind.DECLARED:
        return gettext(
            "Declared by %(who)s on %(when)s: the imported labels of %(size)s %(unit)s(s) come from a random sample "
            "of the %(population)s %(units)s in scope (the analyst's declaration, not checked here).") % {
            "who": who, "when": when, "size": sample.size, "unit": unit, "population": len(sample.population),
            "units": units}
    per_model = ", ".join(gettext("%(name)s %(sample)s of %(population)s") % {
        "name": name, "sample": s["sample"], "population": s["population"]} for name, s in sample.strata.items())
    how = (gettext("within each %(model)s (%(per_model)s)") % {"model": model, "per_model": per_model}
           if sample.stratified else gettext("from all of them"))
    return gettext("A random sample of %(size)s of the %(population)s %(units)s in scope, drawn %(how)s with seed "
                   "%(seed)s by %(who)s on %(when)s; anyone can draw it again from the seed.") % {
        "size": sample.size, "population": len(sample.population), "units": units, "how": how,
        "seed": sample.seed, "who": who, "when": when}
