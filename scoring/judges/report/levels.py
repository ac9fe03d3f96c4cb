"""Items with ordered scores (levels and scale items): weighted kappa, interval alpha, Bland-Altman and the ICC."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from core import stats
from scoring.judges.report.common import _f
from scoring.judges.report.figures import ItemData, ReportContext, _figure
from scoring.reports.agreement import icc_of_scores


def _lower_median(codes: np.ndarray) -> np.ndarray:
    """Per column of (R, n) category indices (-1 = missing): the median physician answer, the lower of the two
    middle answers when their number is even (so it is always one of the item's values); -1 where none."""
    count = (codes >= 0).sum(axis=0)
    ordered = np.sort(np.where(codes >= 0, codes, np.iinfo(np.int64).max), axis=0)
    middle = ordered[np.clip((count - 1) // 2, 0, None), np.arange(codes.shape[1])]
    return np.where(count > 0, middle, -1)


def _ordered_figures(item: ItemData, mask: np.ndarray, settings: ReportContext) -> dict:
    """Levels and scale items: quadratic weighted kappa against the physicians' median, Krippendorff's alpha at the
    interval level, and Bland-Altman of the judge against the physicians' mean beside the physicians' own (each
    physician against the mean of the others)."""
    q = len(item.values)
    values = np.asarray(item.values, dtype=float)
    humans = np.where(mask[None, :], item.humans, -1)
    judge = np.where(mask, item.judge, -1)
    median = _lower_median(humans)
    point = stats.pairwise_tables(judge[None, :], median[None, :], q)[0]
    boot, jack = settings.resample(lambda f: stats.pairwise_tables(judge[None, :], median[None, :], q, f)[:, 0])
    reps = None if boot is None else (stats.kappa_from_tables(boot, "quadratic"),
                                      None if jack is None else stats.kappa_from_tables(jack, "quadratic"))
    W = settings.W
    vs_median = {"n": int(point.sum()), "reference": f"the {W.raters}' median answer (the lower middle answer when "
                                                     "their number is even)",
                 "weighted_kappa": _figure(stats.kappa_from_tables(point, "quadratic"), reps, settings,
                                           scale="landis_koch",
                                           undefined=[f"Weighted kappa is undefined: no variation or no {W.unit}."])}
    # Krippendorff's alpha, interval level, physicians alone and with the judge
    table = stats.count_table(humans.T, q)  # humans and judge are -1 outside the compared dialogues
    table_judge = table + stats.count_table(judge[:, None], q)
    interval = {}
    for key, counts, raters in (("physicians", table, humans), ("with_judge", table_judge,
                                                                 np.vstack([humans, judge[None, :]]))):
        matrix = np.where(raters >= 0, values[np.clip(raters, 0, q - 1)], np.nan)[:, mask]
        shown = [*settings.rater_names, "judge"][:matrix.shape[0]]  # warnings name raters as the report does
        rated = np.isfinite(matrix).any(axis=1)
        detail = stats.krippendorff_alpha_detail(
            pd.DataFrame(matrix[rated], index=[name for name, r in zip(shown, rated, strict=True) if r]),
            level="interval", value_domain=item.values)
        kreps = settings.resample(lambda f, t=counts: stats.krippendorff_alpha_counts(t, item.values, "interval", f))
        interval[key] = _figure(detail["value"], None if kreps[0] is None else kreps, settings, detail["warnings"],
                                "krippendorff")
    a, b = _f(interval["physicians"]["value"]), _f(interval["with_judge"]["value"])
    interval["change"] = None if a is None or b is None else b - a
    # Bland-Altman: judge minus the physicians' mean; the ceiling: a physician minus the mean of the others
    scores = np.where(humans >= 0, values[np.clip(humans, 0, q - 1)], np.nan)
    rated = np.isfinite(scores).any(axis=0)
    with np.errstate(invalid="ignore"):
        physicians_mean = np.where(rated, np.nansum(scores, axis=0) / np.maximum(np.isfinite(scores).sum(axis=0), 1),
                                   np.nan)
    judge_scores = np.where(judge >= 0, values[np.clip(judge, 0, q - 1)], np.nan)
    ok = mask & rated & np.isfinite(judge_scores)
    judge_ba = stats.bland_altman(judge_scores[ok], physicians_mean[ok])
    differences = stats.differences_from_others(scores)
    ceiling = stats.bland_altman_clustered(differences, settings.freq, seed=settings.seed, jackknife=settings.jack,
                                           method=settings.verdict.ci_method)
    per_physician = []
    for name, row in zip(settings.rater_names, differences, strict=True):
        keep = np.isfinite(row)
        if keep.any():
            per_physician.append({"rater": name, **stats.bland_altman(row[keep], np.zeros(int(keep.sum())))})
    width = (None if judge_ba["sd"] is None or ceiling["sd"] is None else
             {"judge": 2 * stats.LOA_Z * judge_ba["sd"], "physicians": 2 * stats.LOA_Z * ceiling["sd"]})
    icc = _icc_with_judge(scores, judge_scores, mask, settings.rater_names)
    return {"vs_median": vs_median, "krippendorff_interval": interval, "icc": icc,
            "bland_altman": {"judge": {**judge_ba, "what": f"judge minus the mean of the {W.raters} who rated the "
                                                           f"{W.unit}"},
                             "ceiling": {**ceiling, "what": f"each {W.rater} minus the mean of the other {W.raters} "
                                                            f"on the same {W.unit}, pooled (bias 0 by construction)"},
                             "per_physician": per_physician, "loa_width": width,
                             "scale": [item.values[0], item.values[-1]]}}


def _icc_with_judge(scores: np.ndarray, judge_scores: np.ndarray, mask: np.ndarray, names: Sequence[str]) -> dict:
    """ICC of the item's scores among the physicians and with the judge as one more rater, in the forms the design
    allows (all six when the same physicians rated every compared dialogue, else ICC1/ICC1k); the headline form is
    single-rater absolute agreement (ICC2, or ICC1 when raters differ between dialogues)."""

    def frame(matrix: np.ndarray) -> pd.DataFrame:
        rater, dialogue = np.nonzero(np.isfinite(matrix) & mask[None, :])
        return pd.DataFrame({"dialogue": dialogue, "rater": rater, "value": matrix[rater, dialogue]})

    shown = dict(enumerate(names))
    physicians = icc_of_scores(frame(scores), "value", shown)
    with_judge = icc_of_scores(frame(np.vstack([scores, judge_scores[None, :]])), "value",
                               {**shown, len(names): "judge"})
    form = "ICC2" if physicians.get("crossed") and with_judge.get("crossed") else "ICC1"

    def headline(entry: dict) -> dict:
        row = entry.get(form) or {}
        return {"value": row.get("icc"), "ci_low": row.get("ci_low"), "ci_high": row.get("ci_high"),
                "interpretation": row.get("interpretation"), "warnings": entry.get("warnings", [])}

    return {"form": form, "physicians": physicians, "with_judge": with_judge,
            "headline": {"physicians": headline(physicians), "with_judge": headline(with_judge)}}
