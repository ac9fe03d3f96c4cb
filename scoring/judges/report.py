"""Judge vs physicians: can an LLM judge replace the physicians on an item? (issue 5 item 6, DESIGN.md section 4)

:func:`judge_vs_physicians` compares one judge run with the submitted labels of one annotation campaign on the
same corpus and scale version and returns a plain, JSON-serialisable dict (``None`` where a figure is undefined,
with the reason in ``warnings``). Per item the run judged, on the dialogues that have both a scored judge answer
(result status ``done``) and at least one physician label:

* **Table 5 layout** (Shi et al., LLM-Mini-CEX): accuracy, precision, recall and F1 of the judge against the physician
  majority. Binary items: positive class 1. Item 4 (ordinal): accuracy plus macro-averaged precision, recall and F1.
  Dialogues whose physician majority is tied are left out of these figures and counted (``n_tied``).
* **Judge vs each physician**: Cohen's kappa (unweighted), Gwet's AC1, percent agreement and macro-F1, pairwise on
  the dialogues the judge shares with each physician, averaged over physicians weighted by the number of shared
  dialogues.
* **Ceiling**: the same figures between physicians (every pair of physicians on their shared dialogues, averaged
  the same way).
* Percentile **bootstrap CIs** resampling dialogues: one resample matrix for every item and figure, evaluated with
  :func:`core.stats.bootstrap_freq` multiplicities (one matrix product per item for all pairs).
* **Krippendorff's alpha** of the physicians alone and with the judge as one more rater (nominal for binary items,
  ordinal for item 4), on the compared dialogues.
* The **verdict** per item, one of :data:`OUTCOMES` with its reasons in words (:func:`decide`,
  :func:`acceptance_rule_text`): not enough data, item unreliable (the physicians' own agreement below the floor),
  judge can replace physicians (non-inferior in the paired bootstrap and better than a constant answer) or keep
  physicians; the coordinator's :class:`VerdictSettings` are printed with it. The paper's rule (accuracy >= 80%)
  is kept beside it (:func:`paper_rule`), flagged when a constant answer would meet it.
* **Levels and scale items** (item 4, HIVMedQA's 0-5 criteria): quadratic weighted kappa against each physician,
  between physicians and against the physicians' median; Krippendorff's alpha at the interval level; Bland-Altman of
  the judge minus the physicians' mean beside each physician minus the mean of the others; the verdict uses
  weighted kappa, or Gwet's AC2 (quadratic weights) for the physicians' agreement at extreme prevalence, with exact
  and within-one agreement beside it; per model the mean score per criterion with bootstrap CIs.
* Per doctor model, the **Table 6** comparison of physician and judge scores, and the **model ranking**
  (:func:`model_ranking`: Kendall's tau between the physicians' and the judge's per-model scores).

:func:`compare_modes` puts two runs side by side that differ only in mode (per-item vs per-dialogue).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from core import stats
from core.stats import formatting, weighted_sums
from scoring.judges import sources, uncertainty
from scoring.judges.estimates import model_estimates
from scoring.judges.sources import judge_frame, judged_codes
from scoring.judges.sources import scale_version_id as run_scale_version_id
from scoring.judges.verdicts import VerdictSettings  # noqa: F401 - where the report's callers have found it
from scoring.reports.agreement import (
    EXTREME_PREVALENCE,
    ORDERED_TYPES,
    icc_of_scores,
    mixed_replicate_warning,
)
from scoring.reports.wording import Words, words_for

REPLACE = "judge can replace physicians"
KEEP = "keep physicians"
UNRELIABLE = "item unreliable"
NOT_ENOUGH = "not enough data"
OUTCOMES = (REPLACE, KEEP, UNRELIABLE, NOT_ENOUGH)
#: Keys of the outcomes in ``summary`` and the API.
OUTCOME_KEYS = {REPLACE: "replace", KEEP: "keep", UNRELIABLE: "unreliable", NOT_ENOUGH: "not_enough"}


def outcome_labels(words: Any = None) -> dict[str, str]:
    """The verdicts in the report's words, by outcome key: "judge can replace physicians" on a dialogue instrument,
    "judge can replace raters" where the raters are not all physicians."""
    W = Words(words)
    return {"replace": f"judge can replace {W.raters}", "keep": f"keep {W.raters}", "unreliable": UNRELIABLE,
            "not_enough": NOT_ENOUGH}
#: Physicians' agreement is measured with Gwet's AC1 instead of Cohen's kappa when the most frequent answer makes
#: up at least this share of their labels (prevalence index |p_yes - p_no| >= 0.6, Byrt, Bishop & Carlin 1993):
#: there kappa is low even when physicians nearly always agree (Feinstein & Cicchetti 1990), AC1 is not (Gwet 2008);
#: items with ordered scores likewise use Gwet's AC2 there. (The agreement report uses the same threshold.)
PAPER_RULE = "accuracy >= 80%, Shi et al., LLM-Mini-CEX, sec. 4.5"
LANDIS_KOCH = "Landis JR, Koch GG (1977). Biometrics 33(1):159-174"
NON_INFERIORITY = ("Walker E, Nowacki AS (2011). Understanding equivalence and noninferiority testing. J Gen Intern "
                   "Med 26(2):192-196; Piaggio G et al. (2012). Reporting of noninferiority and equivalence randomized "
                   "trials: CONSORT 2010 extension. JAMA 308(24):2594-2604")


def averaging(words: Any = None) -> str:
    W = Words(words)
    return (f"mean over {W.raters} weighted by the number of {W.units} the judge shares with each {W.rater}; "
            f"{W.raters} on whom a figure is undefined are left out of that figure's average")


def ceiling_averaging(words: Any = None) -> str:
    W = Words(words)
    return (f"mean over all pairs of {W.raters} weighted by the number of {W.units} each pair shares; "
            "pairs on whom a figure is undefined are left out of that figure's average")


AVERAGING = averaging()
CEILING_AVERAGING = ceiling_averaging()
#: Snapshot keys that may differ between two runs compared by :func:`compare_modes`, besides ``mode``: the
#: configuration's identity, settings that never change an answer (rate limits, timeouts, prices, where the key
#: lives), and the two switches that apply to one mode only (logprobs: per-item; JSON schema: per-dialogue).
MODE_COMPARISON_IGNORED = ("name", "config_id", "prompt_set_name", "api_key_env", "concurrency",
                           "requests_per_minute", "tokens_per_minute", "timeout_seconds", "max_attempts",
                           "price_input_per_1k", "price_output_per_1k", "request_logprobs", "structured_output")
_TOL = 1e-9
WEIGHTED_KAPPA = "quadratic weighted kappa"
GWET_AC2 = "Gwet's AC2 (quadratic weights)"
#: Verdict coefficients of items with ordered scores (levels and scale items).
ORDERED_COEFFICIENTS = ("weighted_kappa", "gwet_ac2")


class JudgeReportError(ValueError):
    """The run and the campaign cannot be compared (other corpus or scale version, runs not differing in mode)."""


# ---------------------------------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------------------------------
def _f(x: Any) -> float | None:
    """Python float, None for None / NaN / inf."""
    if x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _dedupe(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _codes(values: np.ndarray, domain: Sequence[int]) -> np.ndarray:
    """Category index of each value in ``domain`` (sorted); -1 for missing or values outside the domain."""
    dom = np.asarray(domain, dtype=float)
    vals = np.asarray(values, dtype=float)
    pos = np.clip(np.searchsorted(dom, vals), 0, max(len(dom) - 1, 0))
    ok = ~np.isnan(vals) & (dom[pos] == vals) if len(dom) else np.zeros(vals.shape, bool)
    return np.where(ok, pos, -1).astype(np.int64)


def _floor_band(floor: float) -> str:
    """The floor in words, from the same bands that label every kappa (:func:`stats.band_at`): 0.40 is "the start of
    'moderate' agreement (0.40 to < 0.60)", so a physicians' kappa of exactly 0.40 is "moderate" and passes."""
    band = stats.band_at(floor, "landis_koch")
    return f"{band['text']} agreement, {band['range']} on Landis & Koch's bands"


def acceptance_rule_text(settings: VerdictSettings, words: Any = None, *, binary: bool = True,
                         ordered: bool = True) -> str:
    """The verdict rule in words, for the instrument's kinds of items (``binary``: binary or levels items scored
    by exact answers; ``ordered``: levels or scale items) and in its ``words``."""
    W = Words(words)
    floor_band = _floor_band(settings.floor)
    if binary:
        agreement = (f"mean pairwise Cohen's kappa, or Gwet's AC1 when one answer makes up {EXTREME_PREVALENCE:.0%} "
                     "or more of their labels")
        constant = (f"the 95% CI of its kappa against the {W.raters} excludes 0 and its accuracy against the "
                    f"{W.rater} majority exceeds the majority-class rate")
    else:
        agreement = (f"mean pairwise {WEIGHTED_KAPPA}, or {GWET_AC2} when one score makes up "
                     f"{EXTREME_PREVALENCE:.0%} or more of their scores, where weighted kappa is low even when "
                     f"{W.raters} nearly always agree")
        constant = (f"the 95% CI of its weighted kappa against the {W.raters} excludes 0 (a constant or random score "
                    "has weighted kappa 0)")
    text = (f"Per item, in this order: (1) not enough data when fewer than {settings.min_dialogues} {W.units} have "
            f"both a judge and a {W.rater} label; (2) item unreliable when the {W.raters}' own agreement "
            f"({agreement}) is below {settings.floor:.2f} ({floor_band}): no judge verdict; "
            f"(3) the judge can replace {W.raters} only when it is non-inferior to a {W.rater} -- in the paired "
            f"bootstrap over {W.units}, the lower 95% limit of (judge-vs-{W.rater} agreement minus "
            f"{W.rater}-vs-{W.rater} agreement, same coefficient) is above -{settings.margin:g} -- and it beats a "
            f"constant answer -- {constant}; (4) otherwise keep {W.raters}.")
    if binary and ordered:
        text += (f" Items answered with levels or a numeric scale use {WEIGHTED_KAPPA} throughout (a near miss "
                 f"counts as closer than a far one; at extreme prevalence, {EXTREME_PREVALENCE:.0%} or more of the "
                 f"{W.raters}' scores being one value, the {W.raters}' agreement and the non-inferiority test use "
                 f"{GWET_AC2} instead, which stays high when {W.raters} agree on a near-constant item), and beating "
                 f"a constant answer means the 95% CI of the judge's weighted kappa against the {W.raters} excludes "
                 "0 (a constant or random score has weighted kappa 0).")
    if binary:
        text += (f" The paper's rule ({PAPER_RULE}) is shown beside the verdict for comparison and flagged when a "
                 "constant answer would meet it too.")
    return text


# ---------------------------------------------------------------------------------------------------------------
# vectorised figures from confusion tables
# ---------------------------------------------------------------------------------------------------------------
def table_figures(tab: np.ndarray, positive: int | None = None) -> dict[str, np.ndarray]:
    """Figures of confusion tables (..., q, q), rows = judge (prediction), columns = reference; NaN if undefined.

    ``n``, ``accuracy`` (= percent agreement), ``kappa`` (Cohen 1960, unweighted: same as
    :func:`stats.cohen_kappa_codes`), ``gwet_ac1`` (two raters, Gwet 2008: same as :func:`stats.gwet_ac1_counts`
    on the two raters' count table), macro ``precision``/``recall``/``f1`` (``macro_*``: mean over the classes that
    occur in prediction or reference; a class never predicted has precision 0 and one absent from the reference
    recall 0, as scikit-learn's macro average) and, with ``positive`` (a category index), the binary
    ``precision``, ``recall``, ``f1`` of that class (NaN on a zero denominator).
    """
    t = np.asarray(tab, dtype=float)
    q = t.shape[-1]
    n = t.sum(axis=(-1, -2))
    tp = np.diagonal(t, axis1=-2, axis2=-1)
    pred = t.sum(axis=-1)
    ref = t.sum(axis=-2)
    out: dict[str, np.ndarray] = {"n": n}
    with np.errstate(invalid="ignore", divide="ignore"):
        po = tp.sum(axis=-1) / n
        row, col = pred / n[..., None], ref / n[..., None]
        pe = (row * col).sum(axis=-1)
        out["accuracy"] = np.where(n > 0, po, np.nan)
        out["kappa"] = np.where((n > 0) & (1.0 - pe > 1e-12), (po - pe) / (1.0 - pe), np.nan)
        pi = (row + col) / 2.0
        pe_g = (pi * (1.0 - pi)).sum(axis=-1) / (q - 1)
        out["gwet_ac1"] = np.where(n > 0, (po - pe_g) / (1.0 - pe_g), np.nan)
        present = (pred + ref) > 0
        k = present.sum(axis=-1)
        f1_k = np.where(present, 2.0 * tp / np.where(present, pred + ref, 1.0), 0.0)
        prec_k = np.where(pred > 0, tp / np.where(pred > 0, pred, 1.0), 0.0)
        rec_k = np.where(ref > 0, tp / np.where(ref > 0, ref, 1.0), 0.0)
        out["macro_f1"] = np.where(k > 0, (f1_k * present).sum(axis=-1) / k, np.nan)
        out["macro_precision"] = np.where(k > 0, (prec_k * present).sum(axis=-1) / k, np.nan)
        out["macro_recall"] = np.where(k > 0, (rec_k * present).sum(axis=-1) / k, np.nan)
        if positive is not None:
            tpp, pp, rp = tp[..., positive], pred[..., positive], ref[..., positive]
            out["precision"] = np.where(pp > 0, tpp / pp, np.nan)
            out["recall"] = np.where(rp > 0, tpp / rp, np.nan)
            out["f1"] = np.where(pp + rp > 0, 2.0 * tpp / (pp + rp), np.nan)
    return out


# ---------------------------------------------------------------------------------------------------------------
# per-item computation on arrays (no database: testable and benchmarkable on synthetic data)
# ---------------------------------------------------------------------------------------------------------------
@dataclass
class ItemData:
    """One item on the compared dialogues: the judge's and each physician's category indices (-1 = missing)."""

    code: str
    text: str
    dimension: str
    dimension_name: str
    response_type: str
    values: list[int]
    judge: np.ndarray  # (n,)
    humans: np.ndarray  # (R, n)

    @property
    def level(self) -> str:
        return "nominal" if self.response_type == "binary" else "ordinal"

    @property
    def binary(self) -> bool:
        return self.response_type == "binary"

    @property
    def ordered(self) -> bool:
        """Levels and scale items (ordered scores): weighted kappa, interval alpha and Bland-Altman too."""
        return self.response_type in ORDERED_TYPES

    def compared(self) -> np.ndarray:
        return (self.judge >= 0) & (self.humans >= 0).any(axis=0)


@dataclass
class ReportContext:
    freq: np.ndarray | None
    seed: int
    n_resamples: int
    rater_names: list[str]
    verdict: VerdictSettings = field(default_factory=VerdictSettings)
    jack: Any = None  # stats.jackknife_freq(n) when the intervals are BCa
    words: dict = field(default_factory=lambda: words_for("dialogue"))  # scoring.reports.wording

    @property
    def W(self) -> Words:
        return Words(self.words)

    def resample(self, fn) -> tuple[np.ndarray | None, np.ndarray | None]:
        """``fn(freq)`` over the bootstrap resamples and, for BCa, over the jackknife samples."""
        if self.freq is None:
            return None, None
        with np.errstate(all="ignore"):
            return fn(self.freq), (fn(self.jack) if self.jack is not None else None)


Reps = tuple[Any, Any] | None


def _figure(value: Any, reps: Reps, settings: ReportContext, warnings: Sequence[str] = (),
            scale: str | None = None, undefined: Sequence[str] = ()) -> dict:
    """A figure with its bootstrap CI; ``reps`` = (bootstrap replicates, jackknife values or None). ``undefined``:
    why the figure is undefined, said only when it is (a defined figure never carries "undefined")."""
    value = _f(value)
    if value is None:  # the reason says it all; no interval
        out = {"value": None, "ci_low": None, "ci_high": None,
               "warnings": _dedupe(list(warnings) + list(undefined) or ["Undefined for these data."])}
    else:
        boot_values, jack = reps if reps is not None else (None, None)
        method = settings.verdict.ci_method if jack is not None else "percentile"
        boot = stats.bootstrap_summary(
            value, [] if boot_values is None else np.asarray(boot_values, dtype=float).ravel(),
            seed=settings.seed, n_resamples=settings.n_resamples, method=method,
            jackknife=None if jack is None else np.asarray(jack, dtype=float).ravel())
        out = {"value": value, "ci_low": boot["ci_low"], "ci_high": boot["ci_high"],
               "warnings": _dedupe(list(warnings) + boot["warnings"])}
        if boot.get("ci_note"):
            out["ci_note"] = boot["ci_note"]
    if scale:
        out["interpretation"] = stats.interpret(out["value"], scale)
    return out


def _majority(item: ItemData, mask: np.ndarray) -> dict[str, np.ndarray]:
    q = len(item.values)
    humans = np.where(mask[None, :], item.humans, -1)
    counts = stats.count_table(humans.T, q)  # (n, q)
    top = counts.max(axis=1)
    n_modes = (counts == top[:, None]).sum(axis=1)
    rated = counts.sum(axis=1)
    tied = mask & (rated > 0) & (n_modes > 1)
    valid = mask & (rated > 0) & ~tied
    return {"code": np.where(valid, counts.argmax(axis=1), -1), "tied": tied, "valid": valid,
            "single": valid & (rated == 1)}


def _vs_majority(item: ItemData, mask: np.ndarray, settings: ReportContext) -> tuple[dict, np.ndarray]:
    q = len(item.values)
    major = _majority(item, mask)
    judge = np.where(major["valid"], item.judge, -1)
    point = stats.pairwise_tables(judge[None, :], major["code"][None, :], q)
    boot, jack = settings.resample(lambda f: stats.pairwise_tables(judge[None, :], major["code"][None, :], q, f)[:, 0])
    n_tied = int(major["tied"].sum())
    values = np.asarray(item.values)
    W = settings.W
    entry: dict[str, Any] = {
        "n": int(point[0].sum()), "n_tied": n_tied, "n_single_physician": int(major["single"].sum()),
        "ties": (f"{n_tied} {W.unit}(s) whose {W.rater} majority is tied are left out of these figures."
                 if n_tied else f"No tied {W.rater} majority."),
    }
    # the share of the most frequent majority answer: the accuracy of a judge that always gives it
    reference = point[0].sum(axis=0)
    entry["majority_class"] = values[int(reference.argmax())].item() if entry["n"] else None
    entry["majority_class_rate"] = float(reference.max() / entry["n"]) if entry["n"] else None
    warns: list[str] = []
    if n_tied:
        warns.append(entry["ties"])
    if entry["n_single_physician"]:
        warns.append(f"{entry['n_single_physician']} {W.unit}(s) have a single {W.rater} label, which is taken as "
                     "the majority.")

    positive = item.values.index(1) if item.binary and 1 in item.values else None
    boot_figs = None if boot is None else table_figures(boot, positive)
    jack_figs = None if jack is None else table_figures(jack, positive)

    def pick(key: str, _positive: int | None = None) -> Reps:
        if boot_figs is None:
            return None
        return boot_figs[key], None if jack_figs is None else jack_figs[key]

    if item.binary and 1 in item.values:
        pos = item.values.index(1)
        valid = major["valid"]
        report = stats.classification_report(values[item.judge[valid]], values[major["code"][valid]], positive=1)
        entry.update({"averaging": "binary: positive class 1 (done / met)", "positive_class": 1,
                      "tp": report["tp"], "fp": report["fp"], "fn": report["fn"], "tn": report["tn"]})
        by_metric = {"accuracy": "Accuracy", "precision": "Precision", "recall": "Recall", "f1": "F1"}
        for key, word in by_metric.items():
            reasons = [w for w in report["warnings"] if w.startswith(word)] if report[key] is None else []
            entry[key] = _figure(report[key], pick(key, pos), settings, reasons)
        entry["macro_f1"] = _figure(table_figures(point[0])["macro_f1"], pick("macro_f1"), settings,
                                    undefined=["Macro-F1 is undefined: no labelled pairs."])
    else:
        fig_point = table_figures(point[0])
        none = [] if entry["n"] else [f"Undefined: no {W.unit} with an untied {W.rater} majority."]
        entry.update({"averaging": "macro: unweighted mean over the levels that occur in the judge's answers or the "
                                   "majority (a level never predicted has precision 0, one absent from the majority "
                                   "recall 0, as scikit-learn's macro average)",
                      "positive_class": None})
        entry["accuracy"] = _figure(fig_point["accuracy"], pick("accuracy"), settings, none)
        entry["precision"] = _figure(fig_point["macro_precision"], pick("macro_precision"), settings, none)
        entry["recall"] = _figure(fig_point["macro_recall"], pick("macro_recall"), settings, none)
        entry["f1"] = _figure(fig_point["macro_f1"], pick("macro_f1"), settings, none)
        entry["macro_f1"] = entry["f1"]
        entry["confusion"] = {"rows": "judge", "columns": "physician majority", "values": list(item.values),
                              "counts": [[int(x) for x in row] for row in point[0]]}
        if item.ordered:
            reps = None if boot is None else (stats.kappa_from_tables(boot, "quadratic"),
                                              None if jack is None else stats.kappa_from_tables(jack, "quadratic"))
            entry["weighted_kappa"] = _figure(stats.kappa_from_tables(point[0], "quadratic"), reps, settings,
                                              scale="landis_koch",
                                              undefined=none or ["Weighted kappa is undefined: no variation."])
    entry["warnings"] = warns
    return entry, major["code"]


def _pairwise(first: np.ndarray, second: np.ndarray, names: list[list[str]], q: int, settings: ReportContext,
              averaging: str, who: str, ordered: bool = False, values: Sequence[float] | None = None
              ) -> tuple[dict, dict[str, Reps]]:
    """Averaged pairwise figures over pairs (rows of ``first`` vs rows of ``second``); pairs sharing nothing drop.

    Returns the figures and, per figure, its (bootstrap, jackknife) replicates -- the paired differences of the
    verdict are taken on the same resamples."""
    shared = ((first >= 0) & (second >= 0)).sum(axis=1)
    keep = shared > 0
    first, second = first[keep], second[keep]
    names = [n for n, k in zip(names, keep, strict=True) if k]
    out: dict[str, Any] = {"n_pairs": int(keep.sum()), "averaging": averaging}
    keys: tuple[str, ...] = ("accuracy", "kappa", "gwet_ac1", "macro_f1")
    if ordered:
        keys += ("weighted_kappa", "gwet_ac2", "within_one")
        values = list(values) if values is not None else list(range(q))
    W = settings.W
    if not keep.any():
        reason = f"Undefined: no {who} shares {W.a_unit}."
        for key in keys:
            out[key] = _figure(None, None, settings, [reason], "landis_koch" if "kappa" in key or key == "gwet_ac1"
                               else None)
        out["pairs"] = []
        out["warnings"] = [reason]
        return out, {key: None for key in keys}
    point = stats.pairwise_tables(first, second, q)
    boot, jack = settings.resample(lambda f: stats.pairwise_tables(first, second, q, f))
    figs = table_figures(point)
    # point estimates of the agreement coefficients from the statistics engine's kernels
    figs["kappa"] = np.asarray(stats.cohen_kappa_codes(first, second, q), dtype=float).reshape(-1)
    both = (first >= 0) & (second >= 0)
    rater_counts = (stats.count_table(np.where(both, first, -1)[..., None], q)
                    + stats.count_table(np.where(both, second, -1)[..., None], q))  # (P, n, q)
    figs["gwet_ac1"] = np.asarray(stats.gwet_ac1_counts(rater_counts), dtype=float).reshape(-1)
    boot_figs = table_figures(boot) if boot is not None else None
    jack_figs = table_figures(jack) if jack is not None else None
    if ordered:
        for extra, tables in ((figs, point), (boot_figs, boot), (jack_figs, jack)):
            if extra is not None:
                extra["weighted_kappa"] = stats.kappa_from_tables(tables, "quadratic")
                extra["gwet_ac2"] = stats.ac2_from_tables(tables, values, "quadratic")
                extra["within_one"] = stats.weighted_agreement_from_tables(tables, values, "within_one")
    n_point = figs["n"]
    warns: list[str] = []
    undefined_kappa = int((~np.isfinite(figs["kappa"])).sum())
    if undefined_kappa:
        warns.append(f"Cohen's kappa is undefined for {undefined_kappa} of {len(n_point)} {who}(s): no variation "
                     f"(both gave one and the same answer on every shared {W.unit}, so chance agreement is 1); "
                     "left out of the kappa average.")
    one_sided = np.isfinite(figs["kappa"]) & (((point.sum(axis=-1) > 0).sum(axis=-1) == 1)
                                              | ((point.sum(axis=-2) > 0).sum(axis=-1) == 1))
    if one_sided.any():
        warns.append(f"For {int(one_sided.sum())} of {len(n_point)} {who}(s) one side gave the same answer on every "
                     f"shared {W.unit} (zero variance): kappa is 0 by construction there whatever the agreement; see "
                     "percent agreement and Gwet's AC1.")
    replicates: dict[str, Reps] = {}
    for key in keys:
        value = stats.mean_over_pairs(figs[key], n_point)
        reps = None
        if boot_figs is not None:
            reps = (stats.mean_over_pairs(boot_figs[key], boot_figs["n"]),
                    None if jack_figs is None else stats.mean_over_pairs(jack_figs[key], jack_figs["n"]))
        replicates[key] = reps
        reasons = []
        if _f(value) is None:
            reasons.append({"kappa": f"Cohen's kappa is undefined for every {who}: no variation on the shared "
                                     f"{W.units} (chance agreement 1).",
                            "weighted_kappa": f"Weighted kappa is undefined for every {who}: no variation on the "
                                              f"shared {W.units}."}.get(key, f"Undefined for every {who}."))
        out[key] = _figure(value, reps, settings, reasons,
                           "landis_koch" if key in ("kappa", "gwet_ac1", "weighted_kappa", "gwet_ac2") else None)
    out["pairs"] = [{"raters": pair, "n": int(n), "accuracy": _f(acc), "kappa": _f(kap), "gwet_ac1": _f(ac1),
                     "macro_f1": _f(mf1)}
                    for pair, n, acc, kap, ac1, mf1 in zip(names, n_point, figs["accuracy"], figs["kappa"],
                                                           figs["gwet_ac1"], figs["macro_f1"], strict=True)]
    if ordered:
        for n_pair, pair in enumerate(out["pairs"]):
            for key in ("weighted_kappa", "gwet_ac2", "within_one"):
                pair[key] = _f(figs[key][n_pair])
    out["warnings"] = warns
    return out, replicates


def _vs_physicians(item: ItemData, mask: np.ndarray, settings: ReportContext) -> tuple[dict, dict[str, Reps]]:
    humans = np.where(mask[None, :], item.humans, -1)
    judge = np.broadcast_to(np.where(mask, item.judge, -1), humans.shape)
    names = [["judge", name] for name in settings.rater_names]
    out, reps = _pairwise(judge, humans, names, len(item.values), settings, averaging(settings.words),
                          settings.W.rater, item.ordered, item.values)
    out["n_physicians"] = out.pop("n_pairs")
    out["per_physician"] = [{"rater": p.pop("raters")[1], **p} for p in out.pop("pairs")]
    return out, reps


def _ceiling(item: ItemData, mask: np.ndarray, settings: ReportContext) -> tuple[dict, dict[str, Reps]]:
    humans = np.where(mask[None, :], item.humans, -1)
    r = humans.shape[0]
    i, j = np.triu_indices(r, k=1)
    names = [[settings.rater_names[a], settings.rater_names[b]] for a, b in zip(i, j, strict=True)]
    return _pairwise(humans[i], humans[j], names, len(item.values), settings, ceiling_averaging(settings.words),
                     f"pair of {settings.W.raters}", item.ordered, item.values)


def _krippendorff(item: ItemData, mask: np.ndarray, settings: ReportContext) -> dict:
    q = len(item.values)
    values = np.asarray(item.values, dtype=float)
    humans = np.where(mask[None, :], item.humans, -1)[:, mask]
    judge = np.where(mask, item.judge, -1)[mask]
    rated = (humans >= 0).any(axis=1)
    humans = humans[rated]
    matrix = np.where(humans >= 0, values[np.clip(humans, 0, q - 1)], np.nan)
    with_judge = np.vstack([matrix, np.where(judge >= 0, values[np.clip(judge, 0, q - 1)], np.nan)[None, :]])
    names = [n for n, r in zip(settings.rater_names, rated, strict=True) if r]
    alone = stats.krippendorff_alpha_detail(pd.DataFrame(matrix, index=names), level=item.level,
                                            value_domain=item.values)
    joined = stats.krippendorff_alpha_detail(pd.DataFrame(with_judge, index=[*names, "judge"]), level=item.level,
                                             value_domain=item.values)
    table = stats.count_table(np.where(mask[None, :], item.humans, -1).T, q)
    table_judge = table + stats.count_table(np.where(mask, item.judge, -1)[:, None], q)
    reps_alone = settings.resample(lambda f: stats.krippendorff_alpha_counts(table, item.values, item.level, f))
    reps_joined = settings.resample(
        lambda f: stats.krippendorff_alpha_counts(table_judge, item.values, item.level, f))
    reps_alone = None if reps_alone[0] is None else reps_alone
    reps_joined = None if reps_joined[0] is None else reps_joined
    out = {"level": item.level, "n_units": int(mask.sum()),
           "physicians": {**_figure(alone["value"], reps_alone, settings, alone["warnings"], "krippendorff"),
                          "n_raters": int(humans.shape[0])},
           "with_judge": {**_figure(joined["value"], reps_joined, settings, joined["warnings"], "krippendorff"),
                          "n_raters": int(humans.shape[0]) + 1}}
    a, b = _f(alone["value"]), _f(joined["value"])
    out["change"] = None if a is None or b is None else b - a
    return out


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


def _fmt_ci(fig: dict, digits: int = 2) -> str:
    """"value [low, high]" with the decimals the interval needs (:mod:`core.stats.formatting`), the value on its
    own side of the start of each interpretation band."""
    bounds = stats.band_bounds((fig.get("interpretation") or {}).get("scale"))
    d = formatting.decimals(fig["value"], fig.get("ci_low"), fig.get("ci_high"), digits, bounds=bounds)
    if fig.get("ci_note"):
        return f"{formatting.number(fig['value'], d)} (95% CI {fig['ci_note']})"
    limits = formatting.interval(fig.get("ci_low"), fig.get("ci_high"), d)
    return formatting.number(fig["value"], d) + (f" {limits}" if limits else "")


def physician_prevalence(item: ItemData, mask: np.ndarray) -> tuple[float | None, Any]:
    """Share of the most frequent answer among the physicians' labels on the compared dialogues, and that answer."""
    share, answer, _, _ = physician_counts(item, mask)
    return share, answer


def physician_counts(item: ItemData, mask: np.ndarray) -> tuple[float | None, Any, int, int]:
    """(share, answer, count, total) of the most frequent answer among the physicians' labels on the compared
    dialogues."""
    humans = np.where(mask[None, :], item.humans, -1)
    counts = np.bincount(humans[humans >= 0].ravel(), minlength=len(item.values))
    if not counts.sum():
        return None, None, 0, 0
    top = int(counts.argmax())
    return float(counts[top] / counts.sum()), item.values[top], int(counts[top]), int(counts.sum())


def _answer(value: Any) -> str:
    """A score as people write it: 5, 4.5, 1 (not 5.0 or '5')."""
    return f"{value:g}" if isinstance(value, int | float) else str(value)


def _coefficient(prevalence: float | None, answer: Any, ordered: bool = False, words: Any = None,
                 count: int | None = None, total: int | None = None) -> tuple[str, str, str]:
    """(key, name, why) of the agreement coefficient the verdict uses; ``count`` of ``total`` labels are the most
    frequent ``answer`` (said with their counts: "1,102 of 1,104 (99.8%)", never "100%" for fewer than all)."""
    W = Words(words)
    extreme = prevalence is not None and prevalence >= EXTREME_PREVALENCE - _TOL
    share = (formatting.share(count, total) if count is not None and total else
             None if prevalence is None else f"{prevalence:.1%}")
    if ordered and extreme:
        return ("gwet_ac2", GWET_AC2,
                f"{share} of the {W.raters}' scores are {_answer(answer)} (at least {EXTREME_PREVALENCE:.0%}): with "
                f"such extreme prevalence weighted kappa is low even when {W.raters} nearly always agree (the "
                "prevalence paradox; Feinstein & Cicchetti 1990), so agreement is measured with Gwet's AC2 with "
                "quadratic weights (Gwet 2014; the weighted AC1, as irrCAC computes it), the mean over pairs; exact "
                "and within-one agreement are shown beside it")
    if ordered:
        return ("weighted_kappa", WEIGHTED_KAPPA,
                "the item is answered with ordered levels or scores, so a near miss should count as closer than a far "
                "one: agreement is measured with Cohen's kappa with quadratic weights (Cohen 1968; equivalent to an "
                "ICC of the two raters' scores, Fleiss & Cohen 1973), the mean over pairs")
    if extreme:
        return ("gwet_ac1", "Gwet's AC1",
                f"{share} of the {W.raters}' labels are {_answer(answer)} (at least {EXTREME_PREVALENCE:.0%}): "
                f"with such extreme prevalence kappa is low even when {W.raters} nearly always agree (Feinstein & "
                "Cicchetti 1990), so agreement is measured with Gwet's AC1 (Gwet 2008)")
    most = (f"no {W.rater} labels" if prevalence is None else
            f"the most frequent answer, {_answer(answer)}, is {share} of labels")
    return ("kappa", "Cohen's kappa",
            f"{most} (below {EXTREME_PREVALENCE:.0%}): agreement is measured with Cohen's kappa, the mean over "
            "pairs")


def _lower_limit(fig: dict) -> float | None:
    """The lower 95% limit a verdict tests: the CI's, or the value itself when every resample gave that value (the
    interval is not estimable, but nothing in the data varies below it)."""
    if fig.get("ci_note") and fig.get("value") is not None:
        return fig["value"]
    return fig.get("ci_low")


def _percents(a: float, b: float) -> tuple[str, str]:
    """Two shares as percentages with the decimals that tell them apart ("89.6%" and "90.4%", not "90%" twice)."""
    d = formatting.decimals(None, 100 * a, 100 * b, 0)
    return f"{formatting.number(100 * a, d)}%", f"{formatting.number(100 * b, d)}%"


def _undefined_because(name: str, warnings: Sequence[str]) -> str:
    """"<name> is undefined: <why>" from a figure's first warning, without saying "undefined" twice (a warning
    reads "Undefined: no pair ..." or "Cohen's kappa is undefined for every ...")."""
    why = (warnings[0] if warnings else "").removeprefix("Undefined: ").rstrip(".")
    if "undefined" in why.lower():
        return why
    return f"{name} is undefined" + (f": {why}" if why else "")


def decide(item: dict, settings: VerdictSettings, difference: dict | None, words: Any = None) -> dict:
    """The verdict on one item (see :func:`acceptance_rule_text`) with its reasons in plain words (``words``: the
    report's, :mod:`scoring.reports.wording`).

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
    reasons: list[str] = []
    notes: list[str] = []
    floor_band = _floor_band(settings.floor)
    if not checks["enough_data"]:
        outcome = NOT_ENOUGH
        reasons.append(f"Only {n} {W.unit}(s) have both a judge and a {W.rater} label; at least "
                       f"{settings.min_dialogues} are needed before a verdict.")
    elif agreement["value"] is None:
        outcome = NOT_ENOUGH
        reasons.append(f"The {W.raters}' own agreement cannot be measured "
                       f"({_undefined_because(name, agreement['warnings'])}).")
    elif agreement["value"] < settings.floor - _TOL:
        outcome = UNRELIABLE
        checks["reliable"] = False
        reasons.append(f"{W.Raters} agree with each other at {name} = {_fmt_ci(agreement)} "
                       f"({agreement['interpretation']['label']}), below the floor {settings.floor:.2f} "
                       f"({floor_band}): no judge verdict. Revise the item's guidance or take the item back to the "
                       f"Delphi panel.")
    else:
        checks["reliable"] = True
        kappa_ok = _lower_limit(judge_kappa) is not None and _lower_limit(judge_kappa) > 0
        accuracy_ok = ordered or (accuracy is not None and majority_rate is not None
                                  and accuracy > majority_rate + _TOL)
        checks["beats_constant"] = bool(kappa_ok and accuracy_ok)
        if not checks["beats_constant"]:
            detail = []
            if judge_kappa["value"] is None:
                detail.append(f"its {kappa_word} against the {W.raters} is undefined")
            elif not kappa_ok:
                detail.append(f"the 95% CI of its {kappa_word} against the {W.raters}, {_fmt_ci(judge_kappa)}, does "
                              "not exclude 0")
            if ordered:
                pass  # a constant or random score has weighted kappa 0: the kappa check above is the test
            elif accuracy is None:
                detail.append(f"its accuracy against the {W.rater} majority is undefined")
            elif not accuracy_ok:
                mine, rate = _percents(accuracy, majority_rate)
                detail.append(f"its accuracy {mine} does not exceed the majority-class rate {rate} (always "
                              f"answering {_answer(table5['majority_class'])})")
            reasons.append("No better than a constant answer: " + "; ".join(detail) + ".")
        if difference is None or difference["value"] is None:
            checks["non_inferior"] = False
            reasons.append(f"Non-inferiority cannot be checked: the judge's {name} against the {W.raters} is "
                           "undefined.")
        else:
            lower = _lower_limit(difference)
            checks["non_inferior"] = lower is not None and lower > -settings.margin
            if checks["non_inferior"]:
                notes.append(f"Non-inferior to a {W.rater}: judge-vs-{W.rater} minus {W.rater}-vs-{W.rater} {name} = "
                             f"{_fmt_signed_ci(difference)}, lower limit above -{settings.margin:g}.")
            else:
                reasons.append(non_inferiority_not_shown(difference, name, settings.margin, words))
        outcome = REPLACE if checks["beats_constant"] and checks["non_inferior"] else KEEP
        if outcome == REPLACE and ordered:
            notes.append(f"Beats a constant answer: {kappa_word} {_fmt_ci(judge_kappa)} excludes 0 (a constant or "
                         "random score has weighted kappa 0).")
        elif outcome == REPLACE:
            mine, rate = _percents(accuracy, majority_rate)
            notes.append(f"Beats a constant answer: kappa {_fmt_ci(judge_kappa)} excludes 0 and accuracy "
                         f"{mine} exceeds the majority-class rate {rate}.")
    return {"verdict": labels[OUTCOME_KEYS[outcome]], "outcome": OUTCOME_KEYS[outcome], "replace": outcome == REPLACE,
            "reasons": reasons if outcome != REPLACE else notes, "notes": notes if outcome != REPLACE else [],
            "checks": checks, "coefficient": key}


def non_inferiority_not_shown(difference: dict, name: str, margin: float, words: Any = None) -> str:
    """Why non-inferiority is not shown, in words that follow the interval and never contradict the point estimate:
    the lower 95% limit (:func:`_lower_limit`) is at or below minus the margin; what the point estimate says is added
    beside it (a judge whose difference is +0.04 is not said to agree less than the physicians do). Numbers print
    with the decimals their interval needs (:mod:`core.stats.formatting`)."""
    W = Words(words)
    value, low = difference["value"], _lower_limit(difference)
    what = f"judge-vs-{W.rater} minus {W.rater}-vs-{W.rater} {name}"
    if low is None:
        return (f"Non-inferiority not shown: {what} = {formatting.number(value, 2, sign=True)} has no confidence "
                f"interval here (too few resamples or {W.units}), so a loss larger than the margin cannot be ruled "
                "out.")
    where = "below" if low < -margin - _TOL else "at"
    if difference.get("ci_note"):  # every resample gave the same difference: the value itself is tested
        text = (f"Non-inferiority not shown: {what} is {formatting.number(value, 2, sign=True)} in every resample "
                f"({difference['ci_note']}), {where} minus the margin (-{margin:g})")
    else:
        d = formatting.decimals(value, difference.get("ci_low"), difference.get("ci_high"), 2)
        text = (f"Non-inferiority not shown: the lower 95% limit of {what} is {formatting.number(low, d, sign=True)}, "
                f"{where} minus the margin (-{margin:g}); the difference is {_fmt_signed_ci(difference)}")
    if value >= 0:
        detail = (f"the judge agrees with the {W.raters} at least as well as they agree with each other on these "
                  f"{W.units}, but the interval is too wide to rule out a loss larger than the margin (more "
                  f"{W.units} narrow it)")
    elif value > -margin:
        detail = (f"the estimated loss is within the margin, but the interval reaches beyond it (more {W.units} "
                  "narrow it)")
    else:
        detail = (f"the estimated loss is larger than the margin: the judge agrees with the {W.raters} less than they "
                  "agree with each other")
    return f"{text}: {detail}."


def _fmt_signed_ci(fig: dict, digits: int = 2) -> str:
    return formatting.estimate(fig["value"], fig.get("ci_low"), fig.get("ci_high"), digits, sign=True)


def paper_rule(table5: dict, threshold: float, words: Any = None) -> dict:
    """The paper's acceptance rule, kept for comparison: accuracy against the physician majority >= 80%."""
    W = Words(words)
    accuracy, rate = table5["accuracy"]["value"], table5["majority_class_rate"]
    met = accuracy is not None and accuracy >= threshold - _TOL
    constant = rate is not None and rate >= threshold - _TOL
    out = {"rule": PAPER_RULE, "threshold": threshold, "accuracy": accuracy, "met": met,
           "constant_would_meet": constant, "majority_class_rate": rate, "flag": None}
    if met and constant:
        out["flag"] = (f"A constant answer ({_answer(table5['majority_class'])}) would meet this rule too: the "
                       f"majority class is {_percents(rate, threshold)[0]} of {W.units}.")
    return out


def item_report(item: ItemData, settings: ReportContext) -> dict:
    """Every per-item figure of :func:`judge_vs_physicians` for one item (arrays over the bootstrap dialogues)."""
    W = settings.W
    mask = item.compared()
    entry: dict[str, Any] = {"code": item.code, "text": item.text, "dimension": item.dimension,
                             "response_type": item.response_type, "level": item.level, "values": list(item.values),
                             "n_dialogues": int(mask.sum())}
    entry["vs_majority"], _ = _vs_majority(item, mask, settings)
    entry["vs_physicians"], judge_reps = _vs_physicians(item, mask, settings)
    entry["ceiling"], ceiling_reps = _ceiling(item, mask, settings)
    entry["krippendorff_alpha"] = _krippendorff(item, mask, settings)
    if item.ordered:
        entry.update(_ordered_figures(item, mask, settings))
    prevalence, answer, count, total = physician_counts(item, mask)
    key, name, why = _coefficient(prevalence, answer, item.ordered, settings.words, count, total)
    ceiling = entry["ceiling"][key]
    entry["physicians_agreement"] = {**ceiling, "interpretation": stats.interpret(ceiling["value"], "landis_koch"),
                                     "coefficient": key, "name": name, "why": why, "prevalence": prevalence,
                                     "most_frequent_answer": answer, "most_frequent_count": count,
                                     "n_labels": total,
                                     "most_frequent_text": formatting.share(count, total) if total else None}
    if item.ordered:  # beside the coefficient: how often physicians give exactly the same score, or one point apart
        entry["physicians_agreement"]["exact"] = entry["ceiling"]["accuracy"]
        entry["physicians_agreement"]["within_one"] = entry["ceiling"]["within_one"]
    difference = None
    judge_fig = entry["vs_physicians"][key]
    if judge_fig["value"] is not None and ceiling["value"] is not None:
        value = judge_fig["value"] - ceiling["value"]
        reps = None
        if judge_reps[key] is not None and ceiling_reps[key] is not None:
            jack = (None if judge_reps[key][1] is None or ceiling_reps[key][1] is None
                    else judge_reps[key][1] - ceiling_reps[key][1])
            reps = (judge_reps[key][0] - ceiling_reps[key][0], jack)
        difference = {**_figure(value, reps, settings), "coefficient": key, "name": name,
                      "margin": settings.verdict.margin}
    entry["difference"] = difference
    entry["decision"] = decide(entry, settings.verdict, difference, settings.words)
    entry["paper_rule"] = paper_rule(entry["vs_majority"], settings.verdict.paper_accuracy, settings.words)
    warns = []
    if not mask.any():
        warns.append(f"No {W.unit} has both a scored judge answer and a {W.rater} label on this item.")
    entry["warnings"] = warns
    return entry


# ---------------------------------------------------------------------------------------------------------------
# loading
# ---------------------------------------------------------------------------------------------------------------
def source_label(source) -> str:
    """"Run #12" or "Jury #3 (name)": how messages name a scores source."""
    return f"Jury #{source.pk} ({source.name})" if sources.is_jury(source) else f"Run #{source.pk}"


def check_comparable(run, campaign) -> None:
    """Raise :class:`JudgeReportError` unless ``campaign`` rates the run's (or jury's) corpus on its scale
    version."""
    label = source_label(run)
    if campaign.corpus_id != run.corpus_id:
        raise JudgeReportError(f'{label} judged corpus "{run.corpus}" but campaign "{campaign}" rates corpus '
                               f'"{campaign.corpus}": compare a run with a campaign on the same corpus.')
    version_id = run_scale_version_id(run)
    if campaign.scale_version_id != version_id:
        from annotation.models import ScaleVersion

        raise JudgeReportError(
            f'{label} uses prompts for {ScaleVersion.objects.get(pk=version_id)} but campaign "{campaign}" rates '
            f"on {campaign.scale_version}: compare a run with a campaign on the same scale version.")


def _item_arrays(study, judge: pd.DataFrame, codes: set[str], dialogues: pd.Index, raters: pd.Index
                 ) -> tuple[list[ItemData], list[str]]:
    """ItemData for every judged rating item, over ``dialogues`` and ``raters``."""
    W = Words(study.words or None)
    warns: list[str] = []
    by_item = {str(code): frame for code, frame in study.labels.groupby("item", observed=True)}
    judge_by_item = {code: frame for code, frame in judge.groupby("item")}
    empty = study.labels.iloc[0:0]
    items = []
    for meta in study.items:
        if meta.code not in codes:
            continue
        frame = by_item.get(meta.code, empty)
        humans = np.full((len(raters), len(dialogues)), -1, dtype=np.int64)
        d = dialogues.get_indexer(frame["dialogue"].to_numpy())
        r = raters.get_indexer(frame["rater"].to_numpy())
        c = _codes(frame["value"].to_numpy(), meta.values)
        ok = (d >= 0) & (r >= 0)
        if (ok & (c < 0)).any():
            warns.append(f"Item {meta.code}: {int((ok & (c < 0)).sum())} {W.rater} label(s) outside "
                         f"{meta.values} were ignored.")
        ok &= c >= 0
        humans[r[ok], d[ok]] = c[ok]
        jframe = judge_by_item.get(meta.code, judge.iloc[0:0])
        jd = dialogues.get_indexer(jframe["dialogue"].to_numpy())
        jc = _codes(jframe["value"].to_numpy(), meta.values)
        if ((jd >= 0) & (jc < 0)).any():
            warns.append(f"Item {meta.code}: {int(((jd >= 0) & (jc < 0)).sum())} judge answer(s) outside "
                         f"{meta.values} were ignored.")
        judge_codes = np.full(len(dialogues), -1, dtype=np.int64)
        judge_codes[jd[(jd >= 0) & (jc >= 0)]] = jc[(jd >= 0) & (jc >= 0)]
        items.append(ItemData(code=meta.code, text=meta.text, dimension=meta.dimension,
                              dimension_name=meta.dimension_name, response_type=meta.response_type,
                              values=list(meta.values), judge=judge_codes, humans=humans))
    return items, warns


def _restrict(items: list[ItemData], keep: np.ndarray) -> list[ItemData]:
    for item in items:
        item.judge = item.judge[keep]
        item.humans = item.humans[:, keep]
    return items


# ---------------------------------------------------------------------------------------------------------------
# Table 6
# ---------------------------------------------------------------------------------------------------------------
def _criterion_scores(items: list[ItemData], in_model: np.ndarray, settings: ReportContext | None,
                      offset: int) -> dict:
    """Per levels / scale item, on the model's dialogues both scored: the physicians' mean score (a dialogue's score
    = mean over its raters) and the judge's, with percentile bootstrap CIs over the model's dialogues."""
    where = np.flatnonzero(in_model)
    freq = None
    if settings is not None and settings.freq is not None and len(where):
        freq = stats.bootstrap_freq(stats.bootstrap_indices(len(where), settings.n_resamples,
                                                            settings.seed + 101 + offset), len(where))
    out = {}
    for item in items:
        if not item.ordered:
            continue
        vals = np.asarray(item.values, dtype=float)
        mask = item.compared()[where]
        rated = item.humans[:, where] >= 0
        h_vals = np.where(rated, vals[np.clip(item.humans[:, where], 0, len(vals) - 1)], 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            human = np.where(mask, h_vals.sum(axis=0) / np.maximum(rated.sum(axis=0), 1), 0.0)
        judge = np.where(mask, vals[np.clip(item.judge[where], 0, len(vals) - 1)], 0.0)
        weight = mask.astype(float)
        entry: dict[str, Any] = {"text": item.text, "n_dialogues": int(mask.sum()), "min": item.values[0],
                                 "max": item.values[-1]}
        for key, column in (("physicians", human), ("judge", judge), ("difference", judge - human)):
            value = _f(column[mask].mean()) if mask.any() else None
            low = high = note = None
            if value is not None and freq is not None:
                with np.errstate(invalid="ignore", divide="ignore"):
                    reps = weighted_sums(freq, column) / weighted_sums(freq, weight)
                summary = stats.bootstrap_summary(value, reps, seed=settings.seed, n_resamples=len(reps))
                low, high, note = summary["ci_low"], summary["ci_high"], summary.get("ci_note")
            entry[key] = {"mean": value, "ci_low": low, "ci_high": high, "ci_note": note}
        out[item.code] = entry
    return out


def model_scores(items: list[ItemData], dialogue_ids: Sequence[int], dialogue_model: dict[int, str],
                 settings: ReportContext | None = None) -> list[dict]:
    """Shi et al., LLM-Mini-CEX, Table 6 per doctor model: per dimension, sum of item scores / (items x dialogues) in
    %, physicians (mean over raters per dialogue and item) next to the judge, on the (dialogue, item) cells both
    scored."""
    models = np.asarray([dialogue_model.get(d, "(unknown model)") for d in dialogue_ids], dtype=object)
    binary = [i for i in items if i.binary]
    overall = next((i for i in items if not i.binary), None)
    out = []
    for offset, model in enumerate(sorted(set(models.tolist()))):
        in_model = models == model
        entry: dict[str, Any] = {"model": model, "dimensions": {}}
        if any(item.ordered for item in items):
            entry["criteria"] = _criterion_scores(items, in_model, settings, offset)
        groups: dict[str, list[ItemData]] = {}
        for item in binary:
            groups.setdefault(item.dimension, []).append(item)
        totals = {"human": 0.0, "judge": 0.0, "cells": 0, "dialogues": np.zeros(len(dialogue_ids), bool)}
        any_dialogue = np.zeros(len(dialogue_ids), bool)
        for dim, dim_items in groups.items():
            human_sum = judge_sum = 0.0
            cells = 0
            dialogues = np.zeros(len(dialogue_ids), bool)
            for item in dim_items:
                mask = item.compared() & in_model
                vals = np.asarray(item.values, dtype=float)
                rated = item.humans >= 0
                h_vals = np.where(rated, vals[np.clip(item.humans, 0, len(vals) - 1)], 0.0)
                with np.errstate(invalid="ignore", divide="ignore"):
                    h_mean = h_vals.sum(axis=0) / rated.sum(axis=0)
                human_sum += float(h_mean[mask].sum())
                judge_sum += float(vals[item.judge[mask]].sum())
                cells += int(mask.sum())
                dialogues |= mask
            human = 100.0 * human_sum / cells if cells else None
            judge = 100.0 * judge_sum / cells if cells else None
            entry["dimensions"][dim] = {
                "name": dim_items[0].dimension_name, "n_items": len(dim_items), "n_dialogues": int(dialogues.sum()),
                "n_cells": cells, "human_pct": human, "judge_pct": judge,
                "difference_pct": None if human is None or judge is None else judge - human}
            totals["human"] += human_sum
            totals["judge"] += judge_sum
            totals["cells"] += cells
            any_dialogue |= dialogues
        cells = totals["cells"]
        human = 100.0 * totals["human"] / cells if cells else None
        judge = 100.0 * totals["judge"] / cells if cells else None
        if binary:  # Table 6 is about binary items: an instrument without them has no dimension scores
            entry["dimensions"]["all"] = {"name": "All binary items (the Average column of Table 6)",
                                          "n_items": len(binary), "n_dialogues": int(any_dialogue.sum()),
                                          "n_cells": cells, "human_pct": human, "judge_pct": judge,
                                          "difference_pct": None if human is None or judge is None else judge - human}
        if overall is not None:
            mask = overall.compared() & in_model
            vals = np.asarray(overall.values, dtype=float)
            rated = overall.humans >= 0
            h_vals = np.where(rated, vals[np.clip(overall.humans, 0, len(vals) - 1)], 0.0)
            with np.errstate(invalid="ignore", divide="ignore"):
                h_mean = h_vals.sum(axis=0) / rated.sum(axis=0)
            entry["overall"] = {"code": overall.code, "n_dialogues": int(mask.sum()),
                                "human_mean": _f(h_mean[mask].mean()) if mask.any() else None,
                                "judge_mean": _f(vals[overall.judge[mask]].mean()) if mask.any() else None}
        if overall is not None:
            any_dialogue |= overall.compared() & in_model
        entry["n_dialogues"] = int(any_dialogue.sum())
        out.append(entry)
    return out


# ---------------------------------------------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------------------------------------------
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


def _model_score_columns(items: list[ItemData], models: np.ndarray
                         ) -> list[tuple[str, str, np.ndarray, np.ndarray, np.ndarray]]:
    """Per ranking scope: (key, name, physicians' per-dialogue sums, judge's sums, cells) over the dialogues.

    The overall scope ("all") is the binary items, or, for an instrument without binary items (a rubric such as
    HIVMedQA's), every scored criterion with its scores rescaled to 0-1 so that criteria on other ranges weigh
    alike."""
    scopes: list[tuple[str, str, list[ItemData], bool]] = []
    binary = [i for i in items if i.binary]
    for dim in dict.fromkeys(i.dimension for i in binary):
        group = [i for i in binary if i.dimension == dim]
        scopes.append((dim, group[0].dimension_name, group, False))
    ordered = [i for i in items if not i.binary]
    if binary:
        scopes.append(("all", "All binary items", binary, False))
    elif len(ordered) > 1:
        scopes.append(("all", "All criteria (scores rescaled to 0-1)", ordered, True))
    scopes += [(i.code, f"Item {i.code} (mean level)", [i], False) for i in ordered]
    out = []
    for key, name, group, rescale in scopes:
        human = np.zeros(len(models))
        judge = np.zeros(len(models))
        cells = np.zeros(len(models))
        for item in group:
            mask = item.compared()
            vals = np.asarray(item.values, dtype=float)
            if rescale and vals.max() > vals.min():
                vals = (vals - vals.min()) / (vals.max() - vals.min())
            rated = item.humans >= 0
            h_vals = np.where(rated, vals[np.clip(item.humans, 0, len(vals) - 1)], 0.0)
            with np.errstate(invalid="ignore", divide="ignore"):
                h_mean = np.where(mask, h_vals.sum(axis=0) / np.maximum(rated.sum(axis=0), 1), 0.0)
            human += h_mean
            judge += np.where(mask, vals[np.clip(item.judge, 0, len(vals) - 1)], 0.0)
            cells += mask
        out.append((key, name, human, judge, cells))
    return out


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b between the columns of x and y along the last axis (vectorised over leading axes; the same
    value as scipy.stats.kendalltau, tested); NaN when either side is all ties."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    i, j = np.triu_indices(x.shape[-1], 1)
    dx = np.sign(x[..., i] - x[..., j])
    dy = np.sign(y[..., i] - y[..., j])
    with np.errstate(invalid="ignore", divide="ignore"):
        denominator = np.sqrt((dx != 0).sum(axis=-1) * (dy != 0).sum(axis=-1).astype(float))
        return np.where(denominator > 0, (dx * dy).sum(axis=-1) / np.where(denominator > 0, denominator, 1), np.nan)


def model_ranking(items: list[ItemData], dialogue_ids: Sequence[int], dialogue_model: dict[int, str],
                  settings: ReportContext) -> dict:
    """Does the judge order the doctor models as the physicians do?  Kendall's tau-b between the per-model scores
    (sum of item scores / cells, physicians' score of a cell = mean over its raters) of physicians and judge, per
    dimension, over all binary items and per ordinal item, with a bootstrap CI stratified by model."""
    W = settings.W
    models = np.asarray([dialogue_model.get(d, "(unknown model)") for d in dialogue_ids], dtype=object)
    names = sorted(set(models.tolist()))
    out: dict[str, Any] = {"models": names, "n_models": len(names), "scopes": [], "warnings": []}
    if len(names) < 2:
        out["warnings"].append(f"Kendall's tau needs at least two {W.models}; this comparison has "
                               f"{len(names)}.")
        return out
    if len(names) == 2:
        out["warnings"].append(f"With two {W.models} tau is +1 (same order) or -1 (reversed) only.")
    onehot = (models[:, None] == np.asarray(names, dtype=object)[None, :]).astype(float)  # (n, M)
    freq = jack = None
    if settings.freq is not None:
        freq = np.zeros((settings.n_resamples, len(models)))
        for offset, name in enumerate(names):
            where = np.flatnonzero(models == name)
            idx = stats.bootstrap_indices(len(where), settings.n_resamples, settings.seed + 1 + offset)
            freq[:, where] = stats.bootstrap_freq(idx, len(where))
        jack = settings.jack
    strata = ReportContext(freq=freq, seed=settings.seed, n_resamples=settings.n_resamples,
                           rater_names=settings.rater_names, verdict=settings.verdict, jack=jack,
                           words=settings.words)
    for key, name, human, judge, cells in _model_score_columns(items, models):
        with np.errstate(invalid="ignore", divide="ignore"):
            cell_counts = cells @ onehot
            h_scores = (human @ onehot) / cell_counts
            j_scores = (judge @ onehot) / cell_counts
        entry = {"scope": key, "name": name, "physicians": [_f(v) for v in h_scores],
                 "judge": [_f(v) for v in j_scores]}
        defined = np.isfinite(h_scores) & np.isfinite(j_scores)
        reasons = []
        value = None
        if defined.sum() < 2:
            reasons.append(f"Undefined: fewer than two models have scores from both the judge and the {W.raters}.")
        else:
            value = _f(kendall_tau_b(h_scores[defined], j_scores[defined]))  # = scipy's kendalltau, tested
            if value is None:
                reasons.append("Undefined: every model has the same score on one side (all ties).")

        def taus(f, human=human, judge=judge, defined=defined, cells=cells):
            w = weighted_sums(f, onehot[:, defined] * cells[:, None])
            h = weighted_sums(f, onehot[:, defined] * human[:, None]) / w
            j = weighted_sums(f, onehot[:, defined] * judge[:, None]) / w
            return kendall_tau_b(h, j)

        reps = strata.resample(taus) if value is not None else None
        entry["tau"] = _figure(value, reps, strata, reasons)
        entry["same_order"] = value is not None and value >= 1 - _TOL
        out["scopes"].append(entry)
    return out


def _summary(entries: list[dict], ranking: dict, words: Any = None) -> dict:
    W = Words(words)
    labels = outcome_labels(words)
    by_outcome = {key: [e["code"] for e in entries if e["decision"]["outcome"] == key] for key in labels}
    counts = {key: len(codes) for key, codes in by_outcome.items()}
    overall = next((s for s in ranking["scopes"] if s["scope"] == "all"), None)
    if overall is None or overall["tau"]["value"] is None:
        ranking_text = (f"The judge's ranking of the {W.models} cannot be compared with the {W.raters}' "
                        + (f"({ranking['warnings'][0]})" if ranking["warnings"] else "(undefined)") + ".")
    else:
        tau = overall["tau"]
        order = f"exactly as the {W.raters} do" if overall["same_order"] else f"differently from the {W.raters}"
        scope = overall["name"][0].lower() + overall["name"][1:]
        ranking_text = (f"Over {scope} the judge orders the {ranking['n_models']} {W.models} {order}: "
                        f"Kendall's tau = {_fmt_ci(tau)}.")
    return {**by_outcome, "counts": counts, "n_replace": counts["replace"], "n_keep": counts["keep"],
            "n_unreliable": counts["unreliable"], "n_not_enough": counts["not_enough"], "ranking": ranking_text,
            "labels": labels,
            "text": (f"{counts['replace']} item(s): {labels['replace']}; {counts['keep']}: {labels['keep']}; "
                     f"{counts['unreliable']}: {UNRELIABLE}; {counts['not_enough']}: {NOT_ENOUGH}.")}


def judge_vs_physicians(run, campaign, *, verdict: VerdictSettings | None = None, n_resamples: int = 1000,
                        seed: int = 20240501, names: bool = False,
                        progress: Callable[[float, str], None] | None = None) -> dict:
    """The judge vs physicians report of ``run`` against ``campaign`` (see the module docstring).

    Raises :class:`JudgeReportError` (a ValueError) when the campaign rates another corpus or scale version.
    ``verdict``: the coordinator's settings (floor, minimum dialogues, margin, interval method).
    ``names=True`` shows physicians' usernames instead of pseudonyms (check ``exports.may_see_names`` first).
    ``progress(fraction, message)`` is called as the work goes on (the report job shows it).
    """
    from scoring.reports.agreement import load_study

    verdict = verdict or VerdictSettings()
    check_comparable(run, campaign)
    study = load_study([campaign], names=names)
    words = study.words or words_for(study.target)  # what the instrument rates and who rates it
    W = Words(words)
    judge, units = judge_frame(run)
    codes = judged_codes(run)
    if progress is not None:
        progress(0.12, "labels and answers loaded")
    warnings: list[str] = []
    if units.get("unscored") or units.get("failed") or units.get("pending"):
        warnings.append(f"{units.get('unscored', 0)} unscored, {units.get('failed', 0)} failed and "
                        f"{units.get('pending', 0)} pending judge answer(s) are left out of every figure.")
    labels = study.labels
    candidates = pd.Index(sorted(set(judge["dialogue"].tolist()) & set(labels["dialogue"].tolist())))
    raters_all = sorted(labels["rater"].unique().tolist(), key=lambda r: (study.rater_names.get(r, str(r)), r))
    raters = pd.Index(raters_all)
    items, load_warnings = _item_arrays(study, judge, codes, candidates, raters)
    warnings += load_warnings
    keep = np.zeros(len(candidates), bool)
    for item in items:
        keep |= item.compared()
    items = _restrict(items, keep)
    dialogue_ids = [int(d) for d in candidates[keep]]
    n = len(dialogue_ids)
    compared_raters = np.zeros(len(raters), bool)
    for item in items:
        compared_raters |= (item.humans >= 0).any(axis=1)
    freq = stats.bootstrap_freq(stats.bootstrap_indices(n, n_resamples, seed), n) if n else None
    jack = stats.jackknife_freq(n) if n > 1 and verdict.ci_method == "bca" else None
    settings = ReportContext(freq=freq, seed=seed, n_resamples=n_resamples, verdict=verdict, jack=jack,
                             rater_names=[study.rater_names.get(r, str(r)) for r in raters_all], words=words)
    if not n:
        warnings.append(f"No {W.unit} has both a scored judge answer and a submitted {W.rater} label: every figure "
                        "is undefined.")
    small = stats.small_sample_warning(n, verdict.ci_method, f"{W.unit}(s)") if n else None
    if small:
        warnings.append(small)
    item_entries = []
    for k, item in enumerate(items):
        if progress is not None:
            progress(0.15 + 0.75 * k / max(len(items), 1), f"item {item.code} ({k + 1} of {len(items)})")
        item_entries.append(item_report(item, settings))
    if progress is not None:
        progress(0.92, "model ranking and scores")
    ranking = model_ranking(items, dialogue_ids, study.dialogue_model, settings)
    judge_dialogues = set(judge["dialogue"].tolist())
    estimates = model_estimates(run, campaign, study=study, judge=judge)
    summary = _summary(item_entries, ranking, words)
    summary["model_differences"] = estimates["ranking"]["text"]
    replicates = judge_replicates(judge, study, codes)
    has_binary = any(item.binary for item in items)
    if not has_binary:  # the paper's 80% rule is the Mini-CEX's (binary items): no other instrument gets it
        for entry in item_entries:
            entry["paper_rule"] = None
    kinds = {"binary": has_binary, "ordered": any(item.ordered for item in items)}
    levels = [item.code for item in items if item.response_type == "ordinal"]
    mixed = mixed_replicate_warning(labels, study.dialogue_case, study.dialogue_replicate, W.raters)
    if mixed:
        warnings.append(mixed)
    return {
        "kind": "judge_vs_physicians",
        "run": _run_info(run),
        "campaign": {"id": campaign.pk, "name": campaign.name},
        "scale_version": str(campaign.scale_version),
        "seed": seed, "n_resamples": n_resamples, "ci_method": verdict.ci_method,
        "settings": verdict.as_dict(),
        "acceptance_rule": {**verdict.as_dict(), "text": acceptance_rule_text(verdict, words, **kinds),
                            "extreme_prevalence": EXTREME_PREVALENCE, "paper_rule": PAPER_RULE if has_binary else None},
        "outcomes": list(outcome_labels(words).values()),
        "methods": methods(seed, n_resamples, verdict, words, **kinds, levels=levels),
        "method_titles": method_titles(words),
        "has_binary": has_binary,
        "counts": {"units": units, "dialogues_judged": len(judge_dialogues),
                   "dialogues_rated": int(labels["dialogue"].nunique()), "dialogues_compared": n,
                   "physicians": len(raters_all), "physicians_compared": int(compared_raters.sum()),
                   "items": len(item_entries)},
        "physicians": [settings.rater_names[i] for i in range(len(raters_all)) if compared_raters[i]],
        "names_shown": study.names_shown,
        "items": item_entries,
        "has_ordered": any(item.ordered for item in items),
        "near_constant": [e["code"] for e in item_entries if e["physicians_agreement"]["coefficient"] == "gwet_ac2"],
        "words": words,
        "summary": summary,
        "ranking": ranking,
        "models": model_scores(items, dialogue_ids, study.dialogue_model, settings),
        "model_estimates": estimates,
        "uncertainty": uncertainty.deciles(run, labels, words),
        **({"replicates": replicates} if replicates else {}),
        "warnings": _dedupe(warnings),
    }


def judge_scores(run, *, n_resamples: int = 1000, seed: int = 20240501) -> dict:
    """The judge's own scores, without physicians: per model and criterion the mean score with a 95% percentile
    bootstrap CI over the model's texts, and for repeated answers the mean over cases with the SD and CI over
    replicates (Cardenal-Antolin et al., HIVMedQA, Table 2). For any finished run, imported or run by the app."""
    from annotation.models import Dialogue
    from scoring.reports.agreement import item_metas, replicate_section, scored_items

    judge, units = judge_frame(run)
    items = [m for m in item_metas(scored_items(run_scale_version_id(run))) if m.code in judged_codes(run)]
    facts = {pk: (model or "(unknown model)", case, replicate) for pk, model, case, replicate in
             Dialogue.objects.filter(pk__in=set(judge["dialogue"].tolist()))
             .values_list("pk", "source_model", "case", "replicate")}
    model = {pk: f[0] for pk, f in facts.items()}
    by_model = []
    for offset, name in enumerate(sorted(set(model.values()))):
        in_model = judge[judge["dialogue"].map(model) == name]
        entry: dict[str, Any] = {"model": name, "n_texts": int(in_model["dialogue"].nunique()), "criteria": {}}
        for meta in items:
            values = in_model.loc[in_model["item"] == meta.code, "value"].to_numpy(dtype=float)
            figure = {"mean": _f(values.mean()) if len(values) else None, "n": int(len(values)), "ci_low": None,
                      "ci_high": None, "min": meta.values[0] if meta.values else None,
                      "max": meta.values[-1] if meta.values else None}
            if len(values) > 1:
                boot = stats.bootstrap_ci(lambda a: a.mean(axis=-1), values, n_resamples=n_resamples,
                                          seed=seed + offset, vectorized=True)
                figure.update({"ci_low": boot["ci_low"], "ci_high": boot["ci_high"], "ci_note": boot.get("ci_note")})
            entry["criteria"][meta.code] = figure
        by_model.append(entry)
    replicates = replicate_section(judge, items, {pk: f[1] for pk, f in facts.items()},
                                   {pk: f[2] for pk, f in facts.items()}, model)
    return {"kind": "judge_scores", "run": _run_info(run), "units": units,
            "criteria": [{"code": m.code, "text": m.text, "response_type": m.response_type,
                          "min": m.values[0] if m.values else None, "max": m.values[-1] if m.values else None}
                         for m in items],
            "models": by_model, **({"replicates": replicates} if replicates else {}),
            "method": "Mean of the judge's scores over each model's texts with a 95% percentile bootstrap CI over "
                      f"texts ({n_resamples} resamples, seed {seed}); scored answers only (unscored, failed and "
                      "pending answers are left out)."}


def judge_replicates(judge: pd.DataFrame, study, codes: set[str]) -> dict | None:
    """Repeated answers: per model and criterion the mean over cases and the SD and CI over replicates
    (Cardenal-Antolin et al., HIVMedQA, Table 2), from the judge's scores on every text it scored and from the
    physicians' labels, side by side; None when no text carries a replicate number."""
    from annotation.models import Dialogue
    from scoring.reports.agreement import replicate_section

    items = [m for m in study.items if m.code in codes]
    ids = set(judge["dialogue"].tolist()) - set(study.dialogue_case)
    case, replicate, model = dict(study.dialogue_case), dict(study.dialogue_replicate), dict(study.dialogue_model)
    for pk, source_model, text_case, text_replicate in Dialogue.objects.filter(pk__in=ids).values_list(
            "pk", "source_model", "case", "replicate"):
        case[pk], replicate[pk], model[pk] = text_case, text_replicate, source_model or "(unknown model)"
    judge_table = replicate_section(judge, items, case, replicate, model)
    labels = study.labels[study.labels["item"].astype(str).isin(codes)]
    physicians = replicate_section(labels, items, case, replicate, model)
    if judge_table is None and physicians is None:
        return None
    return {"judge": judge_table, "physicians": physicians}


# ---------------------------------------------------------------------------------------------------------------
# per-mode comparison
# ---------------------------------------------------------------------------------------------------------------
def check_modes(run_a, run_b) -> list[str]:
    """Raise :class:`JudgeReportError` unless the two runs' snapshots differ in mode and in nothing else that can
    change an answer (:data:`MODE_COMPARISON_IGNORED`); returns the keys that were compared. An imported run is
    compared with any other run of its scale version (nothing else is known to compare)."""
    if sources.key(run_a) == sources.key(run_b):
        raise JudgeReportError("Compare two different runs.")
    if run_a.corpus_id != run_b.corpus_id:
        raise JudgeReportError(f"{source_label(run_a)} and {source_label(run_b).lower()} judged different corpora.")
    if run_a.is_imported or run_b.is_imported or sources.is_jury(run_a) or sources.is_jury(run_b):
        # A jury, like an imported judge, goes beside any run or jury of its scale version.
        # An imported judge's scores against another run (the app's own, or another imported judge): nothing in
        # their settings is comparable, so any two runs of one scale version go side by side.
        if run_scale_version_id(run_a) != run_scale_version_id(run_b):
            raise JudgeReportError(f"Run #{run_a.pk} and run #{run_b.pk} rate on different scale versions.")
        return []
    a, b = run_a.snapshot or {}, run_b.snapshot or {}
    if a.get("mode") == b.get("mode"):
        raise JudgeReportError(f"Run #{run_a.pk} and run #{run_b.pk} both use mode {a.get('mode')!r}: a mode "
                               "comparison needs one per-item and one per-dialogue run.")
    keys = sorted((set(a) | set(b)) - set(MODE_COMPARISON_IGNORED) - {"mode"})
    differing = [k for k in keys if a.get(k) != b.get(k)]
    if differing:
        detail = "; ".join(f"{k}: {a.get(k)!r} vs {b.get(k)!r}" for k in differing)
        raise JudgeReportError(f"Run #{run_a.pk} and run #{run_b.pk} differ in more than the mode ({detail}); a mode "
                               "comparison needs configurations that are the same apart from mode and name.")
    return keys


def compare_modes(run_a, run_b, campaign, *, names: bool = False) -> dict:
    """Two runs differing only in mode, side by side: per item each run's accuracy and Cohen's kappa against the
    physician majority (on the dialogues both runs scored whose majority is not tied), and the agreement between
    the runs (percent agreement and kappa on the campaign's dialogues both runs scored)."""
    from scoring.reports.agreement import load_study

    check_comparable(run_a, campaign)
    check_comparable(run_b, campaign)
    compared_keys = check_modes(run_a, run_b)
    study = load_study([campaign], names=names)
    judge_a, units_a = judge_frame(run_a)
    judge_b, units_b = judge_frame(run_b)
    codes = judged_codes(run_a) & judged_codes(run_b)
    scope = set(campaign.dialogues().values_list("pk", flat=True))
    dialogues = pd.Index(sorted((set(judge_a["dialogue"].tolist()) | set(judge_b["dialogue"].tolist())) & scope))
    raters = pd.Index(sorted(study.labels["rater"].unique().tolist()))
    items_a, warns_a = _item_arrays(study, judge_a, codes, dialogues, raters)
    items_b, warns_b = _item_arrays(study, judge_b, codes, dialogues, raters)
    entries = []
    for a, b in zip(items_a, items_b, strict=True):
        q = len(a.values)
        both = (a.judge >= 0) & (b.judge >= 0)
        major = _majority(a, both & (a.humans >= 0).any(axis=0))
        sides = {}
        for key, item in (("a", a), ("b", b)):
            judge = np.where(major["valid"], item.judge, -1)
            point = stats.pairwise_tables(judge[None, :], major["code"][None, :], q)
            figs = table_figures(point[0])
            vals = np.asarray(item.values)
            kappa = stats.cohen_kappa_detail(vals[judge[major["valid"]]], vals[major["code"][major["valid"]]],
                                             categories=item.values)
            sides[key] = {"accuracy": _f(figs["accuracy"]), "kappa": kappa["value"],
                          "warnings": kappa["warnings"] if kappa["value"] is None else []}
        point = stats.pairwise_tables(np.where(both, a.judge, -1)[None, :], np.where(both, b.judge, -1)[None, :], q)
        vals = np.asarray(a.values)
        agreement = stats.cohen_kappa_detail(vals[a.judge[both]], vals[b.judge[both]], categories=a.values)
        entries.append({
            "code": a.code, "text": a.text, "level": a.level,
            "n": int(major["valid"].sum()), "n_tied": int(major["tied"].sum()),
            "run_a": sides["a"], "run_b": sides["b"],
            "agreement": {"n": int(both.sum()), "percent_agreement": _f(table_figures(point[0])["accuracy"]),
                          "kappa": agreement["value"], "n_changed": int((a.judge[both] != b.judge[both]).sum()),
                          "warnings": agreement["warnings"] if agreement["value"] is None else []},
        })

    def mean_of(key: str, side: str) -> float | None:
        vals = [e[side][key] for e in entries if e[side][key] is not None]
        return float(np.mean(vals)) if vals else None

    return {
        "kind": "compare_modes",
        "campaign": {"id": campaign.pk, "name": campaign.name},
        "run_a": {**_run_info(run_a), "units": units_a},
        "run_b": {**_run_info(run_b), "units": units_b},
        "compared_settings": compared_keys,
        "ignored_settings": list(MODE_COMPARISON_IGNORED),
        "method": "Against the physician majority: the dialogues both runs scored whose majority (submitted labels of "
                  "the campaign) is not tied, the same dialogues for both runs. Between the runs: every dialogue of "
                  "the campaign both runs scored. Cohen's kappa unweighted.",
        "items": entries,
        "summary": {"mean_accuracy_a": mean_of("accuracy", "run_a"), "mean_accuracy_b": mean_of("accuracy", "run_b"),
                    "items_better_a": sum(1 for e in entries if (e["run_a"]["accuracy"] or 0) >
                                          (e["run_b"]["accuracy"] or 0)),
                    "items_better_b": sum(1 for e in entries if (e["run_b"]["accuracy"] or 0) >
                                          (e["run_a"]["accuracy"] or 0))},
        "warnings": _dedupe(warns_a + warns_b),
    }
