"""Per-item figures on arrays (no database): the judge against the physician majority, against each physician
and between physicians, Krippendorff's alpha, with bootstrap CIs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from core import stats
from scoring.judges.report.common import _dedupe, _f, averaging, ceiling_averaging
from scoring.judges.verdicts import VerdictSettings
from scoring.reports import sentences
from scoring.reports.agreement import ORDERED_TYPES
from scoring.reports.wording import Words, words_for


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
               "warnings": _dedupe(list(warnings) + list(undefined) or [sentences.UNDEFINED_HERE])}
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


def physician_counts(item: ItemData, mask: np.ndarray) -> tuple[float | None, Any, int, int]:
    """(share, answer, count, total) of the most frequent answer among the physicians' labels on the compared
    dialogues."""
    humans = np.where(mask[None, :], item.humans, -1)
    counts = np.bincount(humans[humans >= 0].ravel(), minlength=len(item.values))
    if not counts.sum():
        return None, None, 0, 0
    top = int(counts.argmax())
    return float(counts[top] / counts.sum()), item.values[top], int(counts[top]), int(counts.sum())
