"""The report's methods in words (English: they are cited as written) and their headings."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from django.utils.translation import gettext_noop

from core import stats
from scoring.judges import sources
from scoring.judges.report.common import (
    GWET_AC2,
    LANDIS_KOCH,
    NON_INFERIORITY,
    PAPER_RULE,
    WEIGHTED_KAPPA,
    averaging,
    ceiling_averaging,
)
from scoring.judges.report.verdicts import acceptance_rule_said
from scoring.judges.verdicts import VerdictSettings
from scoring.reports import sentences
from scoring.reports.agreement import EXTREME_PREVALENCE, a_word, bands_said, ci_name, no_variation
from scoring.reports.sentences import Said, said, term, word
from scoring.reports.wording import Words


def _run_info(run) -> dict:
    return sources.info(run)


provenance = sources.provenance


def method_titles_said(words: Any = None) -> dict[str, Said]:
    """The headings of :func:`method_titles` as sentences (message ids with parameters) for the pages."""
    W = Words(words)
    return {
        "reference": said(gettext_noop("Reference")),
        "vs_majority": said(gettext_noop("Against the %(rater)s majority"), rater=word(W.rater)),
        "vs_physicians": said(gettext_noop("Against each %(rater)s"), rater=word(W.rater)),
        "ceiling": said(gettext_noop("Between %(raters)s (the ceiling)"), raters=word(W.raters)),
        "physicians_agreement": said(gettext_noop("%(raters)s' own agreement"), raters=word(W.Raters)),
        "krippendorff": said(gettext_noop("Krippendorff's alpha")), "ci": said(gettext_noop("Confidence intervals")),
        "verdict": said(gettext_noop("Verdict")), "non_inferiority": said(gettext_noop("Non-inferiority")),
        "paper_rule": said(gettext_noop("The paper's rule")), "models": said("%(models)s", models=word(W.Models)),
        "ranking": said(gettext_noop("Model ranking")), "undefined": said(gettext_noop("Undefined figures")),
        "ordered_items": said(gettext_noop("Levels and scale items")),
    }


def method_titles(words: Any = None) -> dict[str, str]:
    """Headings of the methods section (the keys of :func:`methods` are for programs, not for readers)."""
    return {key: title.text for key, title in method_titles_said(words).items()}


METHOD_TITLES = method_titles()


def _levels_text(levels: Sequence[str]) -> str:
    """How the methods name the levels items: "item 4" (the Mini-CEX), "items a, b", or "levels items"."""
    if not levels:
        return "levels items"
    return ("item " if len(levels) == 1 else "items ") + ", ".join(levels)


def _levels_said(levels: Sequence[str]) -> Said:
    """:func:`_levels_text` as a sentence's part."""
    if not levels:
        return said(gettext_noop("levels items"))
    return said(gettext_noop("item %(codes)s") if len(levels) == 1 else gettext_noop("items %(codes)s"),
                codes=", ".join(levels))


def _known(text: str, msgid: str) -> Said | str:
    """``text`` (a constant another module writes) said in the page's language where it is ``msgid``."""
    return said(msgid) if text == msgid else text


def _averaging(words: Any, ceiling: bool) -> Said | str:
    """:func:`averaging` (:func:`ceiling_averaging`) as a sentence's part, where it reads as this module knows it."""
    W = Words(words)
    if ceiling:
        built = said(gettext_noop("mean over all pairs of %(raters)s weighted by the number of %(units)s each pair "
                                  "shares; pairs on whom a figure is undefined are left out of that figure's "
                                  "average"), raters=word(W.raters), units=word(W.units))
        english = ceiling_averaging(words)
    else:
        built = said(gettext_noop("mean over %(raters)s weighted by the number of %(units)s the judge shares with "
                                  "each %(rater)s; %(raters)s on whom a figure is undefined are left out of that "
                                  "figure's average"), raters=word(W.raters), units=word(W.units), rater=word(W.rater))
        english = averaging(words)
    return built if built.text == english else english


def methods(seed: int, n_resamples: int, verdict: VerdictSettings, words: Any = None, *, binary: bool = True,
            ordered: bool = True, levels: Sequence[str] = ("4",)) -> dict:
    """The methods section, for the instrument's kinds of items (``binary``: it has binary items; ``ordered``: levels
    or scale items; ``levels``: the codes of its levels items) and in its ``words``: nothing about binary items,
    item 4 or the Mini-CEX paper's tables where the instrument has none of them. Each text in English, and as message
    ids with parameters under ``said`` (:mod:`scoring.reports.sentences`) for the pages."""
    W = Words(words)
    rater, raters, unit, units = word(W.rater), word(W.raters), word(W.unit), word(W.units)
    model, a_unit = word(W.model), a_word(W.a_unit)
    level_items = _levels_said(levels) if levels else ""
    kinds = []
    if binary:
        kinds.append(said(gettext_noop("Binary items: positive class 1")))
    if ordered:  # each kind starts a clause: "Item 4 and scale items ..."
        kinds.append(said(gettext_noop("%(levels)s and scale items: accuracy (exact answer) with macro-averaged "
                                       "precision, recall and F1"), levels=_capital(level_items)) if level_items else
                     said(gettext_noop("Scale items: accuracy (exact score) with macro-averaged precision, recall and "
                                       "F1")))
    out: dict[str, Any] = {}
    put = functools.partial(sentences.put, out)
    put("reference", said(gettext_noop(
        "%(Raters)s: the submitted labels of the campaign. Compared: per item, the %(units)s with a scored judge "
        "answer (status done; unscored, failed and pending answers are left out) and at least one %(rater)s label."),
        Raters=word(W.Raters), units=units, rater=rater))
    majority = said(gettext_noop(
            "accuracy, precision, recall and F1 of the judge against the %(rater)s majority (the most frequent "
            "answer; %(a_unit)s whose top answers tie is left out and counted as tied; a single %(rater)s label is "
            "its own majority). %(kinds)s. The majority-class rate is the accuracy a judge giving the most frequent "
            "majority answer every time would reach."), rater=rater, a_unit=a_unit,
            kinds=sentences.joined(kinds, "; "))
    put("vs_majority", said(gettext_noop("Shi et al., LLM-Mini-CEX, Table 5: %(text)s"), text=majority) if binary
        else majority)
    put("vs_physicians", said(gettext_noop(
        "Judge against each %(rater)s on the %(units)s they share: percent agreement, Cohen's kappa "
        "(unweighted%(ordered)s), Gwet's AC1 (two raters) and macro-F1 (%(rater)s as reference); %(averaging)s."),
        rater=rater, units=units, ordered=said(gettext_noop(", levels and scale items too")) if ordered else "",
        averaging=_averaging(words, False)))
    put("ceiling", said(gettext_noop("The same figures between %(raters)s, every pair on the %(units)s it shares; "
                                     "%(averaging)s."), raters=raters, units=units,
        averaging=_averaging(words, True)))
    prevalence = f"{EXTREME_PREVALENCE:.0%}"
    parts = []
    if binary:
        parts.append(said(gettext_noop(
            "The %(raters)s' own agreement on a binary item is their mean pairwise Cohen's kappa, or their mean "
            "pairwise Gwet's AC1 when the most frequent answer makes up %(prevalence)s or more of their labels "
            "(prevalence index >= 0.6, Byrt, Bishop & Carlin 1993), where kappa is depressed whatever the agreement "
            "(Feinstein & Cicchetti 1990; Gwet 2008)."), raters=raters, prevalence=prevalence))
    if ordered:
        parts.append(said(gettext_noop(
            "%(subject)s: their mean pairwise %(weighted_kappa)s, or, when one score makes up %(prevalence)s or more "
            "of their scores, their mean pairwise %(ac2)s (Gwet 2014, Handbook of Inter-Rater Reliability, ch. 3; "
            "weights 1 - (x_k - x_l)^2 / (x_max - x_min)^2 on the item's scores, as irrCAC; every point of the item's "
            "scale counts as a category), with exact and within-one-point agreement beside it."),
            subject=said(gettext_noop("Levels and scale items")) if binary else
            said(gettext_noop("The %(raters)s' own agreement on an item"), raters=raters),
            weighted_kappa=term(WEIGHTED_KAPPA), ac2=term(GWET_AC2), prevalence=prevalence))
    parts.append(said(gettext_noop(
        "A bootstrap interval whose resamples all give the same value is reported as %(no_variation)s, and the "
        "verdict then tests the value itself. Bands (%(landis_koch)s): %(bands)s; a bound starts the band above it."),
        no_variation=no_variation(), landis_koch=LANDIS_KOCH, bands=bands_said("landis_koch")))
    agreement = parts[0]
    for part in parts[1:]:
        agreement = said(gettext_noop("%(first)s %(second)s"), first=agreement, second=part)
    put("physicians_agreement", agreement)
    alpha_levels = [part for part, there in ((said(gettext_noop("nominal for binary items")), binary),
                                             (said(gettext_noop("ordinal for levels and scale items")), ordered))
                    if there]
    put("krippendorff", said(gettext_noop(
        "Krippendorff's alpha (krippendorff package; %(levels)s) of the %(raters)s and of the %(raters)s plus the "
        "judge as one more rater, on the compared %(units)s."),
        levels=sentences.joined(alpha_levels, "; "), raters=raters, units=units))
    put("ci", said(gettext_noop(
        "%(name)s over %(units)s: %(n)s resamples, seed %(seed)s, 95%% intervals; the same resampled %(units)s for "
        "every item and figure (weights of the averages are resampled too), so differences between figures are "
        "paired.%(bca)s With fewer than %(small)s %(units)s the report warns that intervals are rough. Figures print "
        "with the decimals their interval needs to tell its limits apart and to show on which side of 0 a limit "
        "lies."), name=ci_name(verdict.ci_method), units=units, n=n_resamples, seed=seed,
        bca=said(gettext_noop(" BCa acceleration from the leave-one-%(unit)s-out jackknife."), unit=unit)
        if verdict.ci_method == "bca" else "", small=stats.SMALL_SAMPLE))
    put("verdict", acceptance_rule_said(verdict, words, binary=binary, ordered=ordered))
    put("non_inferiority", said(gettext_noop(
        "Non-inferiority framing (%(reference)s): the judge may replace a %(rater)s when the lower limit of the "
        "two-sided 95%% interval of (judge-vs-%(rater)s minus %(rater)s-vs-%(rater)s agreement) lies above minus the "
        "margin (%(margin)s), i.e. a one-sided test at 2.5%%. Settings of this report: reliability floor %(floor)s, "
        "minimum %(min)s %(units)s, margin %(margin)s."),
        reference=NON_INFERIORITY, rater=rater, margin=f"{verdict.margin:g}", floor=f"{verdict.floor:g}",
        min=verdict.min_dialogues, units=units))
    models = []
    if binary:
        models.append(said(gettext_noop(
            "Shi et al., LLM-Mini-CEX, Table 6: per %(model)s and dimension, sum of item scores / (items x %(units)s) "
            "in %%, the %(raters)s' score of %(a_unit)s and item being the mean over its raters; on the (%(unit)s, "
            "item) cells both the judge and the %(raters)s scored; 'all' pools every binary item (the Average "
            "column)."), model=model, units=units, raters=raters, a_unit=a_unit, unit=unit))
    if ordered:
        models.append(said(gettext_noop(
            "Per %(model)s and item scored on levels or a scale: the mean score of the %(raters)s (%(a_unit)s's score "
            "= mean over its raters) and of the judge on the %(units)s both scored, with percentile bootstrap CIs "
            "over the %(model)s's %(units)s."), model=model, raters=raters, a_unit=a_unit, units=units))
    if len(models) == 2:
        put("models", said(gettext_noop("%(first)s %(second)s"), first=models[0], second=models[1]))
    elif models:
        put("models", models[0])
    else:
        out["models"] = ""
    scope = (said(gettext_noop("per dimension, over all binary items")) if binary else
             said(gettext_noop("over all items (scores rescaled to 0-1)")))
    per_item = ""
    if ordered:
        per_item = (said(gettext_noop(" and per levels or scale item (mean score)")) if not level_items else
                    said(gettext_noop(" and per %(levels)s and scale item (mean score)"), levels=level_items))
    put("ranking", said(gettext_noop(
        "Whether the judge ranks the %(models)s as the %(raters)s do: Kendall's tau-b (scipy) between the "
        "%(raters)s' and the judge's per-model scores, %(scope)s%(per_item)s, with a bootstrap CI resampling "
        "%(units)s within each model (stratified)."),
        models=word(W.models), raters=raters, scope=scope, per_item=per_item, units=units))
    put("undefined", said(gettext_noop("A figure that is undefined for the data is null with the reason in its "
                                       "warnings, never 0 or 1.")))
    if binary:
        put("paper_rule", said(gettext_noop(
            "The paper's rule (%(rule)s) is shown for comparison with published results; it is flagged where a "
            "constant answer (the majority class every time) would meet it too."),
            rule=_known(PAPER_RULE, gettext_noop("accuracy >= 80%, Shi et al., LLM-Mini-CEX, sec. 4.5"))))
    if ordered:
        put("ordered_items", said(gettext_noop(
            "Items answered with levels or a numeric scale%(examples)s also get: Cohen's kappa with quadratic "
            "weights (Cohen 1968) against each %(rater)s, between %(raters)s (the ceiling) and against the "
            "%(raters)s' median answer; Krippendorff's alpha at the interval level beside the ordinal one, %(raters)s "
            "alone and with the judge; Bland-Altman (Bland & Altman 1986): the judge's score minus the mean of the "
            "%(raters)s who rated the %(unit)s, bias and limits of agreement (bias +- 1.96 SD) with the paper's 95%% "
            "CIs, beside the same figures among %(raters)s (each %(rater)s minus the mean of the other %(raters)s; "
            "pooled over %(raters)s, so the bias is 0 by construction and the limits show how far one %(rater)s "
            "lands from the others; CIs from the bootstrap over %(units)s, since %(a_unit)s contributes several "
            "differences). The %(raters)s' mean over several raters varies less than one %(rater)s, so the judge's "
            "limits are slightly favoured in this comparison. ICC of the item's scores (Shrout & Fleiss 1979, as "
            "pingouin computes it), %(raters)s alone and with the judge as one more rater: single-rater absolute "
            "agreement (ICC2 when the same %(raters)s rated every compared %(unit)s, else the one-way ICC1), 95%% CI "
            "from the F distribution, Koo & Li (2016) bands on the CI; a judge that scores like another %(rater)s "
            "leaves it about unchanged, one that does not lowers it. Model comparison: mean score per criterion, "
            "%(raters)s and judge, with percentile bootstrap CIs over each model's %(units)s."),
            examples=said(gettext_noop(" (e.g. 0-5 criteria)")) if binary else "", rater=rater, raters=raters,
            unit=unit, units=units, a_unit=a_unit))
    return out


def _capital(sentence: Said) -> Said:
    """The levels items' words at the start of a sentence ("Item 4", "Items a, b", "Levels items")."""
    capitals = {"item %(codes)s": gettext_noop("Item %(codes)s"), "items %(codes)s": gettext_noop("Items %(codes)s"),
                "levels items": gettext_noop("Levels items")}
    return said(capitals[sentence.msgid], **sentence.params)
