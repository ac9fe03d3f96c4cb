"""The verdict rule in words and each item's verdict with its reasons, stored as English text and as message ids
with parameters (:mod:`scoring.reports.sentences`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.utils.translation import gettext_noop

from core.stats import formatting
from scoring.judges.report.common import (
    _TOL,
    GWET_AC2,
    KEEP,
    NOT_ENOUGH,
    ORDERED_COEFFICIENTS,
    OUTCOME_KEYS,
    PAPER_RULE,
    REPLACE,
    UNRELIABLE,
    WEIGHTED_KAPPA,
    _answer,
    _fmt_ci,
    _fmt_signed_ci,
    _percents,
    outcome_labels,
)
from scoring.judges.verdicts import VerdictSettings
from scoring.reports.agreement import EXTREME_PREVALENCE
from scoring.reports.sentences import (
    KEY,
    Said,
    Tagged,
    band,
    figure,
    in_a_row,
    joined,
    said,
    stored,
    term,
    texts,
    warning,
    word,
)
from scoring.reports.wording import Words


def acceptance_rule_text(settings: VerdictSettings, words: Any = None, *, binary: bool = True,
                         ordered: bool = True) -> str:
    """The verdict rule in words, for the instrument's kinds of items (``binary``: binary or levels items scored
    by exact answers; ``ordered``: levels or scale items) and in its ``words``."""
    return acceptance_rule_said(settings, words, binary=binary, ordered=ordered).text


def paper_rule_said() -> Said:
    """:data:`PAPER_RULE` as a sentence for the pages."""
    return said(gettext_noop("accuracy >= %(threshold)s, Shi et al., LLM-Mini-CEX, sec. 4.5"), threshold="80%")


def acceptance_rule_said(settings: VerdictSettings, words: Any = None, *, binary: bool = True,
                         ordered: bool = True) -> Said:
    """:func:`acceptance_rule_text` as a message id with its parameters (:mod:`scoring.reports.sentences`)."""
    W = Words(words)
    share = f"{EXTREME_PREVALENCE:.0%}"
    if binary:
        agreement = said(gettext_noop("mean pairwise Cohen's kappa, or Gwet's AC1 when one answer makes up %(share)s "
                                      "or more of their labels"), share=share)
        constant = said(gettext_noop("the 95%% CI of its kappa against the %(raters)s excludes 0 and its accuracy "
                                     "against the %(rater)s majority exceeds the majority-class rate"),
                        raters=word(W.raters), rater=word(W.rater))
    else:
        agreement = said(gettext_noop("mean pairwise %(weighted_kappa)s, or %(ac2)s when one score makes up %(share)s "
                                      "or more of their scores, where weighted kappa is low even when %(raters)s "
                                      "nearly always agree"),
                         weighted_kappa=term(WEIGHTED_KAPPA), ac2=term(GWET_AC2), share=share, raters=word(W.raters))
        constant = said(gettext_noop("the 95%% CI of its weighted kappa against the %(raters)s excludes 0 (a constant "
                                     "or random score has weighted kappa 0)"), raters=word(W.raters))
    parts = [said(gettext_noop(
        "Per item, in this order: (1) not enough data when fewer than %(min)s %(units)s have both a judge and a "
        "%(rater)s label; (2) item unreliable when the %(raters)s' own agreement (%(agreement)s) is below %(floor)s "
        "(%(floor_band)s): no judge verdict; (3) the judge can replace %(raters)s only when it is non-inferior to a "
        "%(rater)s -- in the paired bootstrap over %(units)s, the lower 95%% limit of (judge-vs-%(rater)s agreement "
        "minus %(rater)s-vs-%(rater)s agreement, same coefficient) is above -%(margin)s -- and it beats a constant "
        "answer -- %(constant)s; (4) otherwise keep %(raters)s."),
        min=settings.min_dialogues, units=word(W.units), rater=word(W.rater), raters=word(W.raters),
        agreement=agreement, floor=f"{settings.floor:.2f}", floor_band=_floor_said(settings.floor),
        margin=f"{settings.margin:g}", constant=constant)]
    if binary and ordered:
        parts.append(said(gettext_noop(
            "Items answered with levels or a numeric scale use %(weighted_kappa)s throughout (a near miss counts as "
            "closer than a far one; at extreme prevalence, %(share)s or more of the %(raters)s' scores being one "
            "value, the %(raters)s' agreement and the non-inferiority test use %(ac2)s instead, which stays high when "
            "%(raters)s agree on a near-constant item), and beating a constant answer means the 95%% CI of the "
            "judge's weighted kappa against the %(raters)s excludes 0 (a constant or random score has weighted kappa "
            "0)."), weighted_kappa=term(WEIGHTED_KAPPA), share=share, raters=word(W.raters), ac2=term(GWET_AC2)))
    if binary:
        parts.append(said(gettext_noop("The paper's rule (%(rule)s) is shown beside the verdict for comparison and "
                                       "flagged when a constant answer would meet it too."), rule=paper_rule_said()))
    return in_a_row(parts)


def _coefficient(prevalence: float | None, answer: Any, ordered: bool = False, words: Any = None,
                 count: int | None = None, total: int | None = None) -> tuple[str, str, Said]:
    """(key, name, why) of the agreement coefficient the verdict uses; ``count`` of ``total`` labels are the most
    frequent ``answer`` (said with their counts: "1,102 of 1,104 (99.8%)", never "100%" for fewer than all)."""
    W = Words(words)
    extreme = prevalence is not None and prevalence >= EXTREME_PREVALENCE - _TOL
    share = (formatting.share(count, total) if count is not None and total else
             None if prevalence is None else f"{prevalence:.1%}")
    at_least = f"{EXTREME_PREVALENCE:.0%}"
    if ordered and extreme:
        return ("gwet_ac2", GWET_AC2, said(gettext_noop(
            "%(share)s of the %(raters)s' scores are %(answer)s (at least %(at_least)s): with such extreme prevalence "
            "weighted kappa is low even when %(raters)s nearly always agree (the prevalence paradox; Feinstein & "
            "Cicchetti 1990), so agreement is measured with Gwet's AC2 with quadratic weights (Gwet 2014; the "
            "weighted AC1, as irrCAC computes it), the mean over pairs; exact and within-one agreement are shown "
            "beside it"), share=share, raters=word(W.raters), answer=_answer(answer), at_least=at_least))
    if ordered:
        return ("weighted_kappa", WEIGHTED_KAPPA, said(gettext_noop(
            "the item is answered with ordered levels or scores, so a near miss should count as closer than a far "
            "one: agreement is measured with Cohen's kappa with quadratic weights (Cohen 1968; equivalent to an ICC "
            "of the two raters' scores, Fleiss & Cohen 1973), the mean over pairs")))
    if extreme:
        return ("gwet_ac1", "Gwet's AC1", said(gettext_noop(
            "%(share)s of the %(raters)s' labels are %(answer)s (at least %(at_least)s): with such extreme prevalence "
            "kappa is low even when %(raters)s nearly always agree (Feinstein & Cicchetti 1990), so agreement is "
            "measured with Gwet's AC1 (Gwet 2008)"), share=share, raters=word(W.raters), answer=_answer(answer),
            at_least=at_least))
    most = (said(gettext_noop("no %(rater)s labels"), rater=word(W.rater)) if prevalence is None else
            said(gettext_noop("the most frequent answer, %(answer)s, is %(share)s of labels"), answer=_answer(answer),
                 share=share))
    return ("kappa", "Cohen's kappa", said(gettext_noop(
        "%(most)s (below %(at_least)s): agreement is measured with Cohen's kappa, the mean over pairs"),
        most=most, at_least=at_least))


def _lower_limit(fig: dict) -> float | None:
    """The lower 95% limit a verdict tests: the CI's, or the value itself when every resample gave that value (the
    interval is not estimable, but nothing in the data varies below it)."""
    if fig.get("ci_note") and fig.get("value") is not None:
        return fig["value"]
    return fig.get("ci_low")


def _undefined_because(name: str, warnings: Sequence[str]) -> Said | Tagged:
    """"<name> is undefined: <why>" from a figure's first warning, without saying "undefined" twice (a warning
    reads "Undefined: no pair ..." or "Cohen's kappa is undefined for every ...")."""
    why = (warnings[0] if warnings else "").removeprefix("Undefined: ").rstrip(".")
    if "undefined" in why.lower():
        return warning(why)
    if not why:
        return said(gettext_noop("%(name)s is undefined"), name=term(name))
    return said(gettext_noop("%(name)s is undefined: %(why)s"), name=term(name), why=warning(why))


def _floor_said(floor: float) -> Said:
    """:func:`_floor_band` as a sentence for the pages."""
    from core import stats

    found = stats.band_at(floor, "landis_koch")
    where = (said(gettext_noop("the start of '%(band)s'"), band=band(found["label"])) if found["at_start"] else
             said(gettext_noop("inside '%(band)s'"), band=band(found["label"])))
    return said(gettext_noop("%(band)s agreement, %(range)s on Landis & Koch's bands"), band=where,
                range=found["range"])


def decide(item: dict, settings: VerdictSettings, difference: dict | None, words: Any = None) -> dict:
    """The verdict on one item (see :func:`acceptance_rule_text`) with its reasons in plain words (``words``: the
    report's, :mod:`scoring.reports.wording`): in English under ``reasons`` and ``notes``, and as message ids with
    their parameters under ``said`` (:mod:`scoring.reports.sentences`) for the pages.

    ``item``: the item's entry (n_dialogues, vs_majority, vs_physicians, ceiling, physicians_agreement);
    ``difference``: the paired bootstrap figure of judge-vs-physician minus physician-vs-physician agreement.
    """
    W = Words(words)
    labels = outcome_labels(words)
    agreement = item["physicians_agreement"]
    key, name = agreement["coefficient"], agreement["name"]
    table5 = item["vs_majority"]
    accuracy, majority_rate = table5["accuracy"]["value"], table5["majority_class_rate"]
    # levels and scale items: weighted kappa (AC2 at extreme prevalence); exact accuracy is not the test
    ordered = key in ORDERED_COEFFICIENTS
    judge_kappa = item["vs_physicians"]["weighted_kappa" if ordered else "kappa"]
    kappa_word = "weighted kappa" if ordered else "kappa"
    n = item["n_dialogues"]
    checks: dict[str, Any] = {"enough_data": n >= settings.min_dialogues, "reliable": None,
                              "beats_constant": None, "non_inferior": None}
    reasons: list[Said] = []
    notes: list[Said] = []
    floor = f"{settings.floor:.2f}"
    if not checks["enough_data"]:
        outcome = NOT_ENOUGH
        reasons.append(said(gettext_noop("Only %(n)s %(unit)s(s) have both a judge and a %(rater)s label; at least "
                                         "%(min)s are needed before a verdict."),
                            n=n, unit=word(W.unit), rater=word(W.rater), min=settings.min_dialogues))
    elif agreement["value"] is None:
        outcome = NOT_ENOUGH
        reasons.append(said(gettext_noop("The %(raters)s' own agreement cannot be measured (%(why)s)."),
                            raters=word(W.raters), why=_undefined_because(name, agreement["warnings"])))
    elif agreement["value"] < settings.floor - _TOL:
        outcome = UNRELIABLE
        checks["reliable"] = False
        reasons.append(said(gettext_noop("%(Raters)s agree with each other at %(name)s = %(figure)s (%(band)s), below "
                                         "the floor %(floor)s (%(floor_band)s): no judge verdict. Revise the item's "
                                         "guidance or take the item back to the Delphi panel."),
                            Raters=word(W.Raters), name=term(name), figure=figure(_fmt_ci(agreement)),
                            band=band(agreement["interpretation"]["label"]), floor=floor,
                            floor_band=_floor_said(settings.floor)))
    else:
        checks["reliable"] = True
        kappa_ok = _lower_limit(judge_kappa) is not None and _lower_limit(judge_kappa) > 0
        accuracy_ok = ordered or (accuracy is not None and majority_rate is not None
                                  and accuracy > majority_rate + _TOL)
        checks["beats_constant"] = bool(kappa_ok and accuracy_ok)
        if not checks["beats_constant"]:
            detail = []
            if judge_kappa["value"] is None:
                detail.append(said(gettext_noop("its %(kappa)s against the %(raters)s is undefined"),
                                   kappa=term(kappa_word), raters=word(W.raters)))
            elif not kappa_ok:
                detail.append(said(gettext_noop("the 95%% CI of its %(kappa)s against the %(raters)s, %(figure)s, "
                                                "does not exclude 0"),
                                   kappa=term(kappa_word), raters=word(W.raters), figure=figure(_fmt_ci(judge_kappa))))
            if ordered:
                pass  # a constant or random score has weighted kappa 0: the kappa check above is the test
            elif accuracy is None:
                detail.append(said(gettext_noop("its accuracy against the %(rater)s majority is undefined"),
                                   rater=word(W.rater)))
            elif not accuracy_ok:
                mine, rate = _percents(accuracy, majority_rate)
                detail.append(said(gettext_noop("its accuracy %(accuracy)s does not exceed the majority-class rate "
                                                "%(rate)s (always answering %(answer)s)"),
                                   accuracy=mine, rate=rate, answer=_answer(table5["majority_class"])))
            reasons.append(said(gettext_noop("No better than a constant answer: %(details)s."),
                                details=joined(detail, "; ")))
        if difference is None or difference["value"] is None:
            checks["non_inferior"] = False
            reasons.append(said(gettext_noop("Non-inferiority cannot be checked: the judge's %(name)s against the "
                                             "%(raters)s is undefined."), name=term(name), raters=word(W.raters)))
        else:
            lower = _lower_limit(difference)
            checks["non_inferior"] = lower is not None and lower > -settings.margin
            if checks["non_inferior"]:
                notes.append(said(gettext_noop("Non-inferior to a %(rater)s: judge-vs-%(rater)s minus "
                                               "%(rater)s-vs-%(rater)s %(name)s = %(figure)s, lower limit above "
                                               "-%(margin)s."),
                                  rater=word(W.rater), name=term(name), figure=figure(_fmt_signed_ci(difference)),
                                  margin=f"{settings.margin:g}"))
            else:
                reasons.append(_non_inferiority_said(difference, name, settings.margin, words))
        outcome = REPLACE if checks["beats_constant"] and checks["non_inferior"] else KEEP
        if outcome == REPLACE and ordered:
            notes.append(said(gettext_noop("Beats a constant answer: %(kappa)s %(figure)s excludes 0 (a constant or "
                                           "random score has weighted kappa 0)."),
                              kappa=term(kappa_word), figure=figure(_fmt_ci(judge_kappa))))
        elif outcome == REPLACE:
            mine, rate = _percents(accuracy, majority_rate)
            notes.append(said(gettext_noop("Beats a constant answer: kappa %(figure)s excludes 0 and accuracy "
                                           "%(accuracy)s exceeds the majority-class rate %(rate)s."),
                              figure=figure(_fmt_ci(judge_kappa)), accuracy=mine, rate=rate))
    shown_reasons, shown_notes = (reasons, notes) if outcome != REPLACE else (notes, [])
    return {"verdict": labels[OUTCOME_KEYS[outcome]], "outcome": OUTCOME_KEYS[outcome], "replace": outcome == REPLACE,
            "reasons": texts(shown_reasons), "notes": texts(shown_notes),
            "checks": checks, "coefficient": key,
            KEY: {"reasons": stored(shown_reasons), "notes": stored(shown_notes)}}


def non_inferiority_not_shown(difference: dict, name: str, margin: float, words: Any = None) -> str:
    """Why non-inferiority is not shown, in words that follow the interval and never contradict the point estimate:
    the lower 95% limit (:func:`_lower_limit`) is at or below minus the margin; what the point estimate says is added
    beside it (a judge whose difference is +0.04 is not said to agree less than the physicians do). Numbers print
    with the decimals their interval needs (:mod:`core.stats.formatting`)."""
    return _non_inferiority_said(difference, name, margin, words).text


def _non_inferiority_said(difference: dict, name: str, margin: float, words: Any = None) -> Said:
    W = Words(words)
    value, low = difference["value"], _lower_limit(difference)
    what = said(gettext_noop("judge-vs-%(rater)s minus %(rater)s-vs-%(rater)s %(name)s"), rater=word(W.rater),
                name=term(name))
    if low is None:
        return said(gettext_noop("Non-inferiority not shown: %(what)s = %(value)s has no confidence interval here "
                                 "(too few resamples or %(units)s), so a loss larger than the margin cannot be ruled "
                                 "out."), what=what, value=formatting.number(value, 2, sign=True), units=word(W.units))
    below = low < -margin - _TOL
    if difference.get("ci_note"):  # every resample gave the same difference: the value itself is tested
        text = said(gettext_noop("Non-inferiority not shown: %(what)s is %(value)s in every resample (%(note)s), "
                                 "below minus the margin (-%(margin)s)") if below else
                    gettext_noop("Non-inferiority not shown: %(what)s is %(value)s in every resample (%(note)s), "
                                 "at minus the margin (-%(margin)s)"),
                    what=what, value=formatting.number(value, 2, sign=True), note=figure(difference["ci_note"]),
                    margin=f"{margin:g}")
    else:
        d = formatting.decimals(value, difference.get("ci_low"), difference.get("ci_high"), 2)
        text = said(gettext_noop("Non-inferiority not shown: the lower 95%% limit of %(what)s is %(low)s, below "
                                 "minus the margin (-%(margin)s); the difference is %(figure)s") if below else
                    gettext_noop("Non-inferiority not shown: the lower 95%% limit of %(what)s is %(low)s, at minus "
                                 "the margin (-%(margin)s); the difference is %(figure)s"),
                    what=what, low=formatting.number(low, d, sign=True), margin=f"{margin:g}",
                    figure=figure(_fmt_signed_ci(difference)))
    if value >= 0:
        detail = said(gettext_noop("the judge agrees with the %(raters)s at least as well as they agree with each "
                                   "other on these %(units)s, but the interval is too wide to rule out a loss larger "
                                   "than the margin (more %(units)s narrow it)"),
                      raters=word(W.raters), units=word(W.units))
    elif value > -margin:
        detail = said(gettext_noop("the estimated loss is within the margin, but the interval reaches beyond it "
                                   "(more %(units)s narrow it)"), units=word(W.units))
    else:
        detail = said(gettext_noop("the estimated loss is larger than the margin: the judge agrees with the "
                                   "%(raters)s less than they agree with each other"), raters=word(W.raters))
    return said(gettext_noop("%(text)s: %(detail)s."), text=text, detail=detail)


def paper_rule(table5: dict, threshold: float, words: Any = None) -> dict:
    """The paper's acceptance rule, kept for comparison: accuracy against the physician majority >= 80%."""
    W = Words(words)
    accuracy, rate = table5["accuracy"]["value"], table5["majority_class_rate"]
    met = accuracy is not None and accuracy >= threshold - _TOL
    constant = rate is not None and rate >= threshold - _TOL
    out = {"rule": PAPER_RULE, "threshold": threshold, "accuracy": accuracy, "met": met,
           "constant_would_meet": constant, "majority_class_rate": rate, "flag": None}
    if met and constant:
        flag = said(gettext_noop("A constant answer (%(answer)s) would meet this rule too: the majority class is "
                                 "%(share)s of %(units)s."), answer=_answer(table5["majority_class"]),
                    share=_percents(rate, threshold)[0], units=word(W.units))
        out["flag"] = flag.text
        out[KEY] = {"flag": flag.stored()}
    return out
