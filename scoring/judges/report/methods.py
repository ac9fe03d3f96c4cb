"""The report's methods in words (English: they are cited as written) and their headings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
from scoring.judges.report.verdicts import acceptance_rule_text
from scoring.judges.verdicts import VerdictSettings
from scoring.reports.agreement import EXTREME_PREVALENCE
from scoring.reports.wording import Words


def _run_info(run) -> dict:
    return sources.info(run)


provenance = sources.provenance


def method_titles(words: Any = None) -> dict[str, str]:
    """Headings of the methods section (the keys of :func:`methods` are for programs, not for readers)."""
    W = Words(words)
    return {
        "reference": "Reference", "vs_majority": f"Against the {W.rater} majority",
        "vs_physicians": f"Against each {W.rater}", "ceiling": f"Between {W.raters} (the ceiling)",
        "physicians_agreement": f"{W.Raters}' own agreement", "krippendorff": "Krippendorff's alpha",
        "ci": "Confidence intervals", "verdict": "Verdict", "non_inferiority": "Non-inferiority",
        "paper_rule": "The paper's rule", "models": W.Models, "ranking": "Model ranking",
        "undefined": "Undefined figures", "ordered_items": "Levels and scale items",
    }


METHOD_TITLES = method_titles()


def _levels_text(levels: Sequence[str]) -> str:
    """How the methods name the levels items: "item 4" (the Mini-CEX), "items a, b", or "levels items"."""
    if not levels:
        return "levels items"
    return ("item " if len(levels) == 1 else "items ") + ", ".join(levels)


def methods(seed: int, n_resamples: int, verdict: VerdictSettings, words: Any = None, *, binary: bool = True,
            ordered: bool = True, levels: Sequence[str] = ("4",)) -> dict:
    """The methods section, for the instrument's kinds of items (``binary``: it has binary items; ``ordered``: levels
    or scale items; ``levels``: the codes of its levels items) and in its ``words``: nothing about binary items,
    item 4 or the Mini-CEX paper's tables where the instrument has none of them."""
    W = Words(words)
    ci_name = stats.CI_METHOD_NAMES[verdict.ci_method]
    level_items = _levels_text(levels) if levels else ""
    kinds = [k for k, there in (("binary items: positive class 1", binary),
                                (f"{level_items} and scale items: accuracy (exact answer) with macro-averaged "
                                 "precision, recall and F1" if level_items else
                                 "scale items: accuracy (exact score) with macro-averaged precision, recall and F1",
                                 ordered)) if there]
    table5 = "Shi et al., LLM-Mini-CEX, Table 5: " if binary else ""
    ordered_subject = "Levels and scale items" if binary else f"The {W.raters}' own agreement on an item"
    alpha_levels = "; ".join(part for part, there in (("nominal for binary items", binary),
                                                     ("ordinal for levels and scale items", ordered)) if there)
    out = {
        "reference": f"{W.Raters}: the submitted labels of the campaign. Compared: per item, the {W.units} with a "
                     "scored judge answer (status done; unscored, failed and pending answers are left out) and at "
                     f"least one {W.rater} label.",
        "vs_majority": f"{table5}accuracy, precision, recall and F1 of the judge against the {W.rater} majority (the "
                       f"most frequent answer; {W.a_unit} whose top answers tie is left out and counted as tied; a "
                       f"single {W.rater} label is its own majority). " + "; ".join(k[:1].upper() + k[1:]
                                                                                     for k in kinds)
                       + ". The majority-class rate is the accuracy a judge giving the most frequent majority answer "
                         "every time would reach.",
        "vs_physicians": f"Judge against each {W.rater} on the {W.units} they share: percent agreement, Cohen's "
                         f"kappa (unweighted{', levels and scale items too' if ordered else ''}), Gwet's AC1 (two "
                         f"raters) and macro-F1 ({W.rater} as reference); " + averaging(words) + ".",
        "ceiling": f"The same figures between {W.raters}, every pair on the {W.units} it shares; "
                   + ceiling_averaging(words) + ".",
        "physicians_agreement": (
            (f"The {W.raters}' own agreement on a binary item is their mean pairwise Cohen's kappa, or their mean "
             f"pairwise Gwet's AC1 when the most frequent answer makes up {EXTREME_PREVALENCE:.0%} or more of their "
             "labels (prevalence index >= 0.6, Byrt, Bishop & Carlin 1993), where kappa is depressed whatever the "
             "agreement (Feinstein & Cicchetti 1990; Gwet 2008). " if binary else "")
            + (f"{ordered_subject}: their mean "
               f"pairwise {WEIGHTED_KAPPA}, or, when one score makes up {EXTREME_PREVALENCE:.0%} or more of their "
               f"scores, their mean pairwise {GWET_AC2} (Gwet 2014, Handbook of Inter-Rater Reliability, ch. 3; "
               "weights 1 - (x_k - x_l)^2 / (x_max - x_min)^2 on the item's scores, as irrCAC; every point of the "
               "item's scale counts as a category), with exact and within-one-point agreement beside it. "
               if ordered else "")
            + f"A bootstrap interval whose resamples all give the same value is reported as {stats.NO_VARIATION}, "
              f"and the verdict then tests the value itself. Bands ({LANDIS_KOCH}): {stats.bands_text('landis_koch')}"
              "; a bound starts the band above it."),
        "krippendorff": f"Krippendorff's alpha (krippendorff package; {alpha_levels}) of the {W.raters} and of the "
                        f"{W.raters} plus the judge as one more rater, on the compared {W.units}.",
        "ci": f"{ci_name} over {W.units}: {n_resamples} resamples, seed {seed}, 95% intervals; the same resampled "
              f"{W.units} for every item and figure (weights of the averages are resampled too), so differences "
              "between figures are paired."
              + (f" BCa acceleration from the leave-one-{W.unit}-out jackknife." if verdict.ci_method == "bca" else "")
              + f" With fewer than {stats.SMALL_SAMPLE} {W.units} the report warns that intervals are rough. Figures "
                "print with the decimals their interval needs to tell its limits apart and to show on which side "
                "of 0 a limit lies.",
        "verdict": acceptance_rule_text(verdict, words, binary=binary, ordered=ordered),
        "non_inferiority": f"Non-inferiority framing ({NON_INFERIORITY}): the judge may replace a {W.rater} when the "
                           f"lower limit of the two-sided 95% interval of (judge-vs-{W.rater} minus "
                           f"{W.rater}-vs-{W.rater} agreement) lies above minus the margin ({verdict.margin:g}), "
                           "i.e. a one-sided test at 2.5%. Settings of this report: reliability floor "
                           f"{verdict.floor:g}, minimum {verdict.min_dialogues} {W.units}, margin {verdict.margin:g}.",
        "models": (
            (f"Shi et al., LLM-Mini-CEX, Table 6: per {W.model} and dimension, sum of item scores / (items x "
             f"{W.units}) in %, the {W.raters}' score of {W.a_unit} and item being the mean over its raters; on the "
             f"({W.unit}, item) cells both the judge and the {W.raters} scored; 'all' pools every binary item (the "
             "Average column). " if binary else "")
            + (f"Per {W.model} and item scored on levels or a scale: the mean score of the {W.raters} ({W.a_unit}'s "
               f"score = mean over its raters) and of the judge on the {W.units} both scored, with percentile "
               f"bootstrap CIs over the {W.model}'s {W.units}." if ordered else "")).strip(),
        "ranking": (f"Whether the judge ranks the {W.models} as the {W.raters} do: Kendall's tau-b (scipy) between "
                    f"the {W.raters}' and the judge's per-model scores, "
                    + ("per dimension, over all binary items" if binary else "over all items (scores rescaled to 0-1)")
                    + (f" and per {'levels or scale item' if not level_items else level_items + ' and scale item'} "
                       "(mean score)" if ordered else "")
                    + f", with a bootstrap CI resampling {W.units} within each model (stratified)."),
        "undefined": "A figure that is undefined for the data is null with the reason in its warnings, never 0 or 1.",
    }
    if binary:
        out["paper_rule"] = (f"The paper's rule ({PAPER_RULE}) is shown for comparison with published results; it "
                             "is flagged where a constant answer (the majority class every time) would meet it too.")
    if ordered:
        out["ordered_items"] = (
            f"Items answered with levels or a numeric scale{' (e.g. 0-5 criteria)' if binary else ''} also get: "
            f"Cohen's kappa with quadratic weights (Cohen 1968) against each {W.rater}, between {W.raters} (the "
            f"ceiling) and against the {W.raters}' median answer; Krippendorff's alpha at the interval level beside "
            f"the ordinal one, {W.raters} alone and with the judge; Bland-Altman (Bland & Altman 1986): the judge's "
            f"score minus the mean of the {W.raters} who rated the {W.unit}, bias and limits of agreement (bias +- "
            f"1.96 SD) with the paper's 95% CIs, beside the same figures among {W.raters} (each {W.rater} minus the "
            f"mean of the other {W.raters}; pooled over {W.raters}, so the bias is 0 by construction and the limits "
            f"show how far one {W.rater} lands from the others; CIs from the bootstrap over {W.units}, since "
            f"{W.a_unit} contributes several differences). The {W.raters}' mean over several raters varies less than "
            f"one {W.rater}, so the judge's limits are slightly favoured in this comparison. ICC of the item's scores "
            f"(Shrout & Fleiss 1979, as pingouin computes it), {W.raters} alone and with the judge as one more rater: "
            f"single-rater absolute agreement (ICC2 when the same {W.raters} rated every compared {W.unit}, else the "
            "one-way ICC1), 95% CI from the F distribution, Koo & Li (2016) bands on the CI; a judge that scores "
            f"like another {W.rater} leaves it about unchanged, one that does not lowers it. Model comparison: mean "
            f"score per criterion, {W.raters} and judge, with percentile bootstrap CIs over each model's {W.units}.")
    return out
