"""Agreement, reliability and model-comparison reports for annotation campaigns.

``load_study`` reads the submitted labels of one or more campaigns into a DataFrame; ``compute`` turns it
into a plain, JSON-serialisable dict with every figure, its CI, n, an interpretation band and its source.
The statistics themselves come from ``core.stats``; this module only arranges the data.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from itertools import chain
from typing import Any

import numpy as np
import pandas as pd
from django.utils.translation import gettext_noop

from annotation.models import Assignment, Campaign, Dialogue, Item, Label
from core import stats
from core.stats import formatting
from scoring.reports import sentences
from scoring.reports.fingerprint import CI_METHODS, CORRELATIONS, study_fingerprint  # noqa: F401
from scoring.reports.sentences import said, word
from scoring.reports.wording import raters_are_physicians, words_for

N_RESAMPLES = 1000
CI_METHOD = "percentile bootstrap over dialogues"
#: Response types with ordered scores (levels and scale items).
ORDERED_TYPES = ("ordinal", "scale")
#: At or above this share of one answer among the physicians' labels, agreement on an item with ordered scores is
#: led by Gwet's AC2 instead of weighted kappa (the judge report's threshold, Byrt, Bishop & Carlin 1993).
EXTREME_PREVALENCE = 0.80
#: Per-rater reliability is shown for raters with at least this many complete ratings.
MIN_RATER_DIALOGUES = 10
Progress = Callable[[float, str], None]


class ReportError(ValueError):
    """The requested report cannot be built (e.g. campaigns on different scale versions)."""


@dataclass
class ItemMeta:
    code: str
    text: str
    dimension: str
    dimension_name: str
    response_type: str
    values: list[int]

    @property
    def level(self) -> str:
        """Krippendorff's level (DESIGN.md section 4): nominal for binary items, ordinal otherwise."""
        return "nominal" if self.response_type == "binary" else "ordinal"

    @property
    def ordered(self) -> bool:
        """Levels and scale items: ordered scores, which also get weighted kappa, interval alpha, ICC and
        Bland-Altman."""
        return self.response_type in ORDERED_TYPES


@dataclass
class Study:
    """Submitted labels of one or more campaigns, with what the report needs to name things."""

    title: str
    campaigns: list[Campaign]
    labels: pd.DataFrame  # columns: dialogue, rater, item, value
    items: list[ItemMeta]
    dialogue_model: dict[int, str]
    dialogue_external: dict[int, str]
    rater_names: dict[int, str]
    fingerprint: str
    names_shown: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    dialogue_case: dict[int, str] = field(default_factory=dict)
    dialogue_replicate: dict[int, int | None] = field(default_factory=dict)
    target: str = "dialogue"  # what the instrument rates: "dialogue" or "answer"
    words: dict[str, str] = field(default_factory=dict)  # scoring.reports.wording


def scored_items(version_id: int):
    """The version's binary, levels and scale items in order (with their levels)."""
    return (Item.objects.filter(version_id=version_id, response_type__in=Item.SCORED_TYPES)
            .select_related("dimension").prefetch_related("levels").order_by("order"))


def item_metas(items) -> list[ItemMeta]:
    return [ItemMeta(code=i.code, text=i.text_en, dimension=i.dimension.code, dimension_name=i.dimension.name_en,
                     response_type=i.response_type, values=i.allowed_values()) for i in items]


def float_rows(queryset, k: int, chunk: int = 20000) -> np.ndarray:
    """``(n, k)`` float array of a ``values_list`` queryset of ``k`` numeric columns, read with the database cursor
    in chunks: Django's per-row converters would cost more than the query (0.3 s on 643,200 labels)."""
    from django.db import connections

    sql, params = queryset.query.sql_with_params()
    parts = []
    with connections[queryset.db].cursor() as cursor:
        cursor.execute(sql, params)
        while batch := cursor.fetchmany(chunk):
            parts.append(np.fromiter(chain.from_iterable(batch), dtype=float, count=k * len(batch)))
    return np.concatenate(parts).reshape(-1, k) if parts else np.empty((0, k))


def load_study(campaigns: Sequence[Campaign], *, names: bool = False, title: str | None = None) -> Study:
    """Read submitted labels (values only, no model instances: a MedEval-sized study is 643k rows)."""
    campaigns = list(campaigns)
    if not campaigns:
        raise ReportError("No campaign to report on.")
    versions = {c.scale_version_id for c in campaigns}
    if len(versions) != 1:
        raise ReportError("These campaigns use different scale versions; report on one campaign at a time.")
    version_id = versions.pop()
    fingerprint = study_fingerprint(campaigns)
    items_qs = scored_items(version_id)
    items = item_metas(items_qs)
    code_of = {i.pk: i.code for i in items_qs}
    # Only the items above: free-text items are not analysed here; they are in the exports. They are picked out
    # below, not in the query: with ``item_id IN (...)`` SQLite reads the labels through the (campaign, item) index,
    # one table lookup per label in item order (0.5 s of 1.1 s on 643,200 labels); without it, in campaign order.
    rows = (Label.objects.filter(campaign__in=campaigns, value__isnull=False,
                                 assignment__status=Assignment.Status.SUBMITTED)
            .order_by()  # Label's default ordering joins three tables and sorts 643k rows on disk
            .values_list("dialogue_id", "rater_id", "item_id", "value"))
    # floats: values of scales in steps (4.5) are kept exactly; ids are far below 2**53
    arr = float_rows(rows, 4)
    item_ids = sorted(code_of)
    arr = arr[np.isin(arr[:, 2], item_ids)] if len(arr) else arr
    ids = arr[:, :3].astype(np.int64)
    labels = pd.DataFrame({
        "dialogue": ids[:, 0], "rater": ids[:, 1],
        "item": pd.Categorical.from_codes(np.searchsorted(item_ids, ids[:, 2]),
                                          categories=[code_of[k] for k in item_ids]),
        "value": arr[:, 3]})
    dialogue_ids = labels["dialogue"].unique().tolist()
    meta = list(Dialogue.objects.filter(pk__in=dialogue_ids).values_list("pk", "source_model", "external_id", "case",
                                                                         "replicate"))
    dialogue_model = {pk: model or "(unknown model)" for pk, model, *_ in meta}
    dialogue_external = {pk: ext for pk, _, ext, *_ in meta}
    rater_ids = labels["rater"].unique().tolist()
    if names:
        from django.contrib.auth import get_user_model

        rater_names = dict(get_user_model().objects.filter(pk__in=rater_ids).values_list("pk", "username"))
    else:
        from projects.pseudonyms import pseudonyms

        rater_names = pseudonyms(campaigns[0].project_id, rater_ids)
    version = campaigns[0].scale_version
    return Study(title=title or ", ".join(c.name for c in campaigns), campaigns=campaigns, labels=labels,
                 items=items, dialogue_model=dialogue_model, dialogue_external=dialogue_external,
                 rater_names=rater_names, fingerprint=fingerprint, names_shown=names,
                 dialogue_case={pk: case for pk, _, _, case, _ in meta},
                 dialogue_replicate={pk: replicate for pk, *_, replicate in meta},
                 target=version.scale.target if version else "dialogue",
                 words=words_for(version.scale.target, raters_are_physicians(rater_ids)))


# ---------------------------------------------------------------------------------------------------------------
# computation
# ---------------------------------------------------------------------------------------------------------------
@dataclass
class Resampling:
    """Bootstrap multiplicities over dialogues, the jackknife for BCa, and how intervals are taken."""

    freq: np.ndarray
    seed: int
    method: str = "percentile"
    jack: Any = None

    def ci(self, estimate: Any, kernel: Callable[[Any], Any], warnings: list[str] | None = None) -> dict:
        """Interval of ``estimate`` from ``kernel(freq)`` (and ``kernel(jackknife)`` for BCa)."""
        with np.errstate(all="ignore"):
            replicates = np.asarray(kernel(self.freq), dtype=float).ravel()
            jackknife = None if self.jack is None else np.asarray(kernel(self.jack), dtype=float).ravel()
        return stats.bootstrap_summary(estimate, replicates, seed=self.seed, n_resamples=len(replicates),
                                       warnings=warnings, method=self.method if jackknife is not None else "percentile",
                                       jackknife=jackknife)


def _resampling(n: int, n_resamples: int, seed: int, method: str) -> Resampling:
    freq = stats.bootstrap_freq(stats.bootstrap_indices(n, n_resamples, seed), n)
    return Resampling(freq=freq, seed=seed, method=method,
                      jack=stats.jackknife_freq(n) if method == "bca" and n > 1 else None)


def _figure(detail: dict, boot: dict, scale: str | None) -> dict:
    value = detail.get("value")
    out = {"value": value, "ci_low": boot["ci_low"], "ci_high": boot["ci_high"],
           "warnings": list(dict.fromkeys(detail.get("warnings", []) + boot["warnings"]))}
    if boot.get("ci_note"):
        out["ci_note"] = boot["ci_note"]
    if scale:
        out["interpretation"] = stats.interpret(value, scale)
    return out


def _named(wide: pd.DataFrame, study: Study) -> pd.DataFrame:
    """Rater columns under the names the report shows (pseudonyms unless names are allowed), so that the
    statistics' warnings never show a database id."""
    return wide.rename(columns=lambda r: study.rater_names.get(r, f"R{r}"))


def _shared_sums(tables: list[np.ndarray], metas: list[ItemMeta]) -> Callable[[int, str], Callable[[Any], Any]]:
    """Kernels of percent agreement, Fleiss' kappa, AC1 and Krippendorff's alpha of every item over the resamples:
    the first one asked for computes them all, with one matrix product per multiplicity matrix (bootstrap or
    jackknife) for all items (:func:`stats.agreement_many`)."""
    done: dict[int, list[dict]] = {}

    def kernel(index: int, name: str) -> Callable[[Any], Any]:
        def run(freq: Any) -> Any:
            if id(freq) not in done:
                done[id(freq)] = stats.agreement_many(tables, [m.values for m in metas], [m.level for m in metas],
                                                      freq)
            return done[id(freq)][index][name]
        return run
    return kernel


def _dialogue_by_rater(frame: pd.DataFrame) -> pd.DataFrame:
    """One item's labels as dialogues x raters (sorted; the first value of a pair, NaN where none): what
    ``pivot_table(index="dialogue", columns="rater", values="value", aggfunc="first")`` gives, without its group-by
    (a tenth of the report on 24 items)."""
    value = frame["value"].to_numpy(dtype=float)
    seen = ~np.isnan(value)
    dialogues, rows = np.unique(frame["dialogue"].to_numpy()[seen], return_inverse=True)
    raters, columns = np.unique(frame["rater"].to_numpy()[seen], return_inverse=True)
    _, first = np.unique(rows * len(raters) + columns, return_index=True)  # the first label of each pair
    values = np.full((len(dialogues), len(raters)), np.nan)
    values[rows[first], columns[first]] = value[seen][first]
    return pd.DataFrame(values, index=pd.Index(dialogues, name="dialogue"), columns=pd.Index(raters, name="rater"))


def _item_agreement(study: Study, boot: Resampling, dialogue_index: dict[int, int]) -> list[dict]:
    """Per item: % agreement, Fleiss' kappa, Gwet's AC1 and Krippendorff's alpha with bootstrap CIs."""
    by_item = {code: frame for code, frame in study.labels.groupby("item", observed=False)}
    n_dialogues = len(dialogue_index)
    parts = []
    for meta in study.items:  # every item's table first: the bootstrap kernels take them all at once
        frame = by_item.get(meta.code, study.labels.iloc[0:0])
        wide = _named(_dialogue_by_rater(frame), study)
        codes, _ = stats.encode_labels(wide.to_numpy(), categories=meta.values) if len(wide) else (
            np.empty((0, 0), dtype=np.int64), meta.values)
        table_part = stats.count_table(codes, len(meta.values)) if len(wide) else np.empty((0, len(meta.values)))
        table = np.zeros((n_dialogues, len(meta.values)))
        if len(wide):
            table[[dialogue_index[d] for d in wide.index]] = table_part
        parts.append((meta, frame, wide, codes, table))
    shared = _shared_sums([table for *_, table in parts], list(study.items))
    result = []
    for index, (meta, frame, wide, codes, table) in enumerate(parts):
        entry: dict[str, Any] = {"code": meta.code, "text": meta.text, "dimension": meta.dimension,
                                 "level": meta.level, "n_labels": int(len(frame)), "n_dialogues": int(len(wide)),
                                 "n_raters": int(wide.shape[1])}
        pa = stats.percent_agreement_detail(wide)
        fleiss = stats.fleiss_kappa_detail(wide, categories=meta.values)
        ac1 = stats.gwet_ac1_detail(wide, categories=meta.values)
        kripp = stats.krippendorff_alpha_detail(wide.T, level=meta.level, value_domain=meta.values)
        entry["percent_agreement"] = _figure(pa, boot.ci(pa["value"], shared(index, "percent_agreement")), None)
        entry["fleiss_kappa"] = _figure(fleiss, boot.ci(fleiss["value"], shared(index, "fleiss_kappa")),
                                        "landis_koch")
        entry["gwet_ac1"] = _figure(ac1, boot.ci(ac1["value"], shared(index, "gwet_ac1")), "landis_koch")
        entry["krippendorff_alpha"] = _figure(kripp, boot.ci(kripp["value"], shared(index, "krippendorff_alpha")),
                                              "krippendorff")
        entry["prevalence"] = (None if not len(frame) else
                               {str(v): float((frame["value"] == v).mean()) for v in meta.values})
        if meta.ordered:
            rows = np.asarray([dialogue_index[d] for d in wide.index], dtype=np.int64)
            entry.update(_ordered_item(study, meta, frame, wide, codes, table, rows, boot))
        result.append(entry)
    return result


def _ordered_item(study: Study, meta: ItemMeta, frame: pd.DataFrame, wide: pd.DataFrame, codes: np.ndarray,
                 table: np.ndarray, rows: np.ndarray, boot: Resampling) -> dict:
    """Levels and scale items: mean pairwise quadratic weighted kappa, Krippendorff's alpha at the interval level
    (the ordinal one is ``krippendorff_alpha``), ICC of the item's scores and each physician against the mean of
    the others (Bland-Altman)."""
    q = len(meta.values)
    out: dict[str, Any] = {"ordered": True}
    n_full = table.shape[0]
    i, j = np.triu_indices(codes.shape[1] if codes.ndim == 2 else 0, k=1)
    if len(i) and len(wide):
        # every pair of physicians, their codes over every dialogue of the resampling (-1: not rated)
        over_all = np.full((codes.shape[1], n_full), -1, dtype=np.int64)
        over_all[:, rows] = codes.T
        first, second = over_all[i], over_all[j]
        tables = stats.pairwise_tables(first, second, q)
        n_pairs = tables.sum(axis=(-1, -2))
        per_pair = stats.kappa_from_tables(tables, "quadratic")
        value = stats.mean_over_pairs(per_pair, n_pairs)

        def kernel(f, a=first, b=second):
            t = stats.pairwise_tables(a, b, q, f)
            return stats.mean_over_pairs(stats.kappa_from_tables(t, "quadratic"), t.sum(axis=(-1, -2)))

        reasons = [] if np.isfinite(value) else [sentences.WEIGHTED_KAPPA_NO_PAIR]
        estimate = float(value) if np.isfinite(value) else None
        out["weighted_kappa"] = _figure({"value": estimate, "warnings": reasons}, boot.ci(estimate, kernel),
                                        "landis_koch")
        out["weighted_kappa"].update({"n_pairs": int((n_pairs > 0).sum()), "weights": "quadratic"})
    else:
        out["weighted_kappa"] = {"value": None, "ci_low": None, "ci_high": None, "n_pairs": 0,
                                 "weights": "quadratic", "warnings": [sentences.FEWER_THAN_TWO_PHYSICIANS],
                                 "interpretation": stats.interpret(None, "landis_koch")}
    # Gwet's AC2 (quadratic weights) with exact and within-one-point agreement: at extreme prevalence (one score for
    # most answers) weighted kappa collapses although the physicians agree (the prevalence paradox); AC2 does not.
    ac2 = stats.gwet_ac2_counts(table, meta.values) if len(wide) else float("nan")
    ac2_value = float(ac2) if np.isfinite(ac2) else None
    out["gwet_ac2"] = _figure({"value": ac2_value, "warnings": [] if ac2_value is not None else [
        sentences.NO_TWO_SCORES]}, boot.ci(ac2_value, lambda f, t=table, m=meta: (
            stats.gwet_ac2_counts(t, m.values, freq=f))), "landis_koch")
    out["gwet_ac2"]["weights"] = "quadratic"
    within = stats.weighted_agreement_counts(table, stats.agreement_weights(meta.values, "within_one"))
    within_value = float(within) if np.isfinite(within) else None
    w_one = stats.agreement_weights(meta.values, "within_one")
    out["within_one"] = _figure({"value": within_value, "warnings": [] if within_value is not None else [
        sentences.NO_TWO_SCORES]}, boot.ci(within_value, lambda f, t=table: (
            stats.weighted_agreement_counts(t, w_one, f))), None)
    counts = table.sum(axis=0)
    share = float(counts.max() / counts.sum()) if counts.sum() else None
    out["extreme_prevalence"] = share is not None and share >= EXTREME_PREVALENCE
    out["headline"] = "gwet_ac2" if out["extreme_prevalence"] else "weighted_kappa"
    out["most_frequent_share"] = share
    out["most_frequent_text"] = (formatting.share(int(counts.max()), int(counts.sum())) if counts.sum() else
                                 None)  # "1,102 of 1,104 (99.8%)": never a rounded 100%
    interval = stats.krippendorff_alpha_detail(wide.T, level="interval", value_domain=meta.values)
    out["krippendorff_interval"] = _figure(
        interval, boot.ci(interval["value"],
                          lambda f, t=table, m=meta: stats.krippendorff_alpha_counts(t, m.values, "interval", f)),
        "krippendorff")
    out["icc"] = icc_of_scores(frame[["dialogue", "rater", "value"]], "value", study.rater_names, study.words)
    scores = wide.to_numpy(dtype=float).T  # (raters, dialogues)
    differences = stats.differences_from_others(scores)
    full = np.full((differences.shape[0], n_full), np.nan)
    full[:, rows] = differences
    pooled = stats.bland_altman_clustered(full, boot.freq, seed=boot.seed, jackknife=boot.jack, method=boot.method)
    per_rater = []
    for name, row in zip(wide.columns, differences, strict=True):
        ok = np.isfinite(row)
        if ok.any():
            per_rater.append({"rater": str(name), **stats.bland_altman(row[ok], np.zeros(int(ok.sum())))})
    words = study.words or {}
    out["bland_altman"] = {"pooled": pooled, "per_rater": per_rater,
                           "what": f"each {words.get('rater', 'physician')} minus the mean of the other "
                                   f"{words.get('raters', 'physicians')} on the same {words.get('unit', 'dialogue')}"}
    return out


def _dimension_scores(study: Study) -> pd.DataFrame:
    """Per (dialogue, rater): the sum of binary item values of each dimension, and item 4 ("overall")."""
    items = {m.code: m for m in study.items}
    labels = study.labels
    if any(m.response_type == "scale" for m in study.items):  # scale items have no dimension score; see _ordered_item
        labels = labels[labels["item"].isin([m.code for m in study.items if m.response_type != "scale"])]
    labels = labels.assign(dimension=labels["item"].map(
        lambda c: items[c].dimension if items[c].response_type == "binary" else "overall").astype(str))
    sums = labels.pivot_table(index=["dialogue", "rater"], columns="dimension", values="value", aggfunc="sum")
    return sums


ICC_LEFT_OUT = gettext_noop(
    "Raters differ between %(units)s, so there is no rater effect to estimate: ICC2 and ICC3 (two-way models with "
    "raters as a factor) would treat arbitrary rating slots as raters and are not reported. ICC1 (one-way random: "
    "each %(unit)s rated by its own set of raters) and ICC1k (the mean of k ratings) fit this design (Shrout & "
    "Fleiss 1979; Koo & Li 2016).")


def rater_sets(dialogues: np.ndarray, raters: np.ndarray) -> tuple[int, np.ndarray, int, bool]:
    """The design of rows (dialogue, rater): the number of dialogues, the dialogues with the usual number k of
    ratings (the most frequent; the smallest of equally frequent ones), k, and whether those dialogues all have the
    same raters. What grouping the rows by dialogue into sorted tuples of raters gives, without a Python call per
    dialogue."""
    order = np.lexsort((raters, dialogues))
    by_dialogue, by_rater = dialogues[order], raters[order]
    ids, starts, counts = np.unique(by_dialogue, return_index=True, return_counts=True)
    sizes, frequency = np.unique(counts, return_counts=True)
    k = int(sizes[np.argmax(frequency)])
    full = counts == k
    sets = by_rater[(starts[full][:, None] + np.arange(k)).ravel()].reshape(-1, k)
    return len(ids), ids[full], k, bool((sets == sets[0]).all())


def _icc_layout(frame: pd.DataFrame, names: Mapping[Any, str], words: Mapping[str, str] | None = None) -> dict:
    """Rows (dialogue, rater, ...) of the dialogues with the usual number of raters, with the ICC's rater column
    ``slot``: the rater's name when every dialogue has the same raters (all six forms), else the rating's order
    within its dialogue (one-way forms only)."""
    n_dialogues, complete, k, crossed = rater_sets(frame["dialogue"].to_numpy(), frame["rater"].to_numpy())
    warnings = []
    unit, units = (words or {}).get("unit", "dialogue"), (words or {}).get("units", "dialogues")
    if len(complete) < n_dialogues:
        warnings.append(said(sentences.ICC_INCOMPLETE, n=n_dialogues - len(complete), unit=word(unit), k=k).text)
    frame = frame[frame["dialogue"].isin(complete)].copy()
    if crossed:
        frame["slot"] = frame["rater"].map(lambda r: names.get(r, f"R{r}"))
        design = said(gettext_noop("crossed: every %(unit)s rated by the same raters"), unit=word(unit))
        forms = list(stats.ICC_FORMS)
        left_out = None
    else:
        frame = frame.sort_values(["dialogue", "rater"])
        frame["slot"] = frame.groupby("dialogue").cumcount() + 1
        design = said(gettext_noop("not crossed: raters differ between %(units)s (%(k)s per %(unit)s); one-way "
                                   "model, ICC1 and ICC1k only"), units=word(units), k=k, unit=word(unit))
        forms = ["ICC1", "ICC1k"]
        left_out = said(ICC_LEFT_OUT, units=word(units), unit=word(unit))
    out = {"frame": frame, "crossed": bool(crossed), "k": k, "forms": forms, "warnings": warnings}
    sentences.put(out, "design", design)
    sentences.put(out, "left_out", left_out)
    return out


def _icc_forms(frame: pd.DataFrame, column: str, forms: list[str], crossed: bool) -> dict:
    """The reported ICC forms of one score column, with Koo & Li bands read off the 95% CI."""
    result = stats.icc(frame[["dialogue", "slot", column]].dropna(), targets="dialogue", raters="slot",
                       ratings=column)
    entry: dict[str, Any] = {}
    for form in stats.ICC_FORMS:
        row = result.get(form)
        if form not in forms or not isinstance(row, dict):
            continue
        row["interpretation"] = stats.interpret_interval(row.get("ci_low"), row.get("ci_high"), "koo_li_icc")
        row["interpretation_point"] = stats.interpret(row.get("icc"), "koo_li_icc")
        entry[form] = row
    if not crossed:  # slot-specific warnings belong to the forms we do not report
        result["warnings"] = [w for w in result["warnings"] if "Zero-variance rater" not in w]
    entry.update({key: result[key] for key in ("warnings", "n_targets", "n_raters")})
    return entry


def icc_of_scores(frame: pd.DataFrame, column: str, names: Mapping[Any, str],
                  words: Mapping[str, str] | None = None) -> dict:
    """ICC of one item's scores (rows dialogue, rater, ``column``; ``names``: rater -> name shown) in the forms its
    design allows."""
    if frame.empty:
        return {"design": None, "forms": [], "warnings": [sentences.NO_LABELS_YET]}
    layout = _icc_layout(frame, names, words)
    entry = _icc_forms(layout["frame"], column, layout["forms"], layout["crossed"])
    entry["warnings"] = layout["warnings"] + entry["warnings"]
    entry.update({key: layout[key] for key in ("design", "crossed", "forms", "left_out", sentences.KEY)})
    return entry


def _icc(study: Study) -> dict:
    """ICC of per-dialogue dimension scores: all six Shrout-Fleiss forms when every dialogue has the same raters,
    else ICC1 and ICC1k only; Koo & Li bands read off the 95% CI."""
    scores = _dimension_scores(study)
    if scores.empty:
        return {"design": None, "dimensions": {}, "warnings": [
            sentences.NO_LABELS_YET if study.labels.empty or any(m.response_type == "binary" for m in study.items)
            else sentences.NO_BINARY_ITEMS_ICC]}
    layout = _icc_layout(scores.reset_index(), study.rater_names, study.words)
    frame, crossed, forms = layout["frame"], layout["crossed"], layout["forms"]
    dims = {}
    names = {m.dimension: m.dimension_name for m in study.items if m.response_type == "binary"}
    names["overall"] = "Overall clinical competence (item 4)"
    for column in scores.columns:
        entry: dict[str, Any] = {"name": names.get(str(column), str(column))}
        entry.update(_icc_forms(frame, column, forms, crossed))
        dims[str(column)] = entry
    out = {"design": layout["design"], "crossed": crossed, "raters_per_dialogue": layout["k"], "forms": forms,
           "left_out": layout["left_out"], "dimensions": dims, "warnings": layout["warnings"],
           sentences.KEY: dict(layout[sentences.KEY])}
    sentences.put(out, "bands", said(gettext_noop("Koo & Li (2016) bands applied to the 95%% CI, as they recommend "
                                                  "(e.g. 'moderate to good')")))
    return out


def _reliability(study: Study, n_resamples: int, seed: int, method: str = "percentile",
                 correlation: str = "pearson", boot: Resampling | None = None) -> dict:
    """Scale reliability and validity on the binary items (Shi et al., LLM-Mini-CEX, Tables 3-4) on a defensible unit.

    Rows are ratings (dialogue x rater), which are not independent: a dialogue appears once per rater. So the
    alpha CIs come from a cluster bootstrap over dialogues (all ratings of a drawn dialogue go together), Bartlett's
    test counts dialogues, not ratings, as its n, KMO (descriptive) is computed on the ratings, and alpha is also
    shown per rater (each rater's dialogues are independent; Feldt CI). ``correlation``: Pearson (phi on binary
    items, as the paper; alpha = KR-20) or tetrachoric (alpha becomes ordinal alpha, KMO and Bartlett use the
    tetrachoric matrix).
    """
    binary = [m for m in study.items if m.response_type == "binary"]
    labels = study.labels[study.labels["item"].isin([m.code for m in binary])]
    wide = labels.pivot_table(index=["dialogue", "rater"], columns="item", values="value", aggfunc="first",
                              observed=True)
    wide = wide[[m.code for m in binary if m.code in wide.columns]].dropna()
    dialogues = wide.index.get_level_values("dialogue").to_numpy() if len(wide) else np.array([], dtype=int)
    raters = wide.index.get_level_values("rater").to_numpy() if len(wide) else np.array([], dtype=int)
    tetrachoric = correlation == "tetrachoric"
    coefficient = said(gettext_noop("ordinal alpha (tetrachoric correlations; Zumbo, Gadermann & Zeisser 2007)")
                       if tetrachoric else
                       gettext_noop("Cronbach's alpha (= KR-20 on binary items; Kuder & Richardson 1937)"))
    n_dialogues, n_raters = int(pd.unique(dialogues).size), int(pd.unique(raters).size)
    out: dict[str, Any] = {
        "n_ratings": int(len(wide)), "n_dialogues": n_dialogues, "n_raters": n_raters, "items": list(wide.columns),
        "correlation": correlation,
    }
    sentences.put(out, "coefficient", coefficient)
    sentences.put(out, "unit", said(gettext_noop("ratings (dialogue x rater): %(n)s complete ratings of "
                                                 "%(n_dialogues)s dialogue(s) by %(n_raters)s rater(s), clustered by "
                                                 "dialogue"), n=len(wide), n_dialogues=n_dialogues,
                                    n_raters=n_raters))
    if wide.empty:
        out["warnings"] = [sentences.NO_COMPLETE_RATINGS if binary else sentences.NO_BINARY_ITEMS_RELIABILITY]
        return out
    cluster, _ = pd.factorize(dialogues)
    if boot is None or boot.freq.shape != (n_resamples, n_dialogues) or boot.seed != seed or boot.method != method:
        boot = _resampling(n_dialogues, n_resamples, seed, method)  # else: the same draws, already made
    x = wide.to_numpy(dtype=float)
    columns = list(wide.columns)
    ci_method = f"cluster bootstrap over dialogues ({stats.CI_METHOD_NAMES[method].split(' (')[0]})"
    pairs_i, pairs_j = np.triu_indices(len(columns), 1)
    if tetrachoric:
        with np.errstate(all="ignore"):
            rho_point = stats.tetrachoric_clustered(x, cluster)[0]
            rho_boot = stats.tetrachoric_clustered(x, cluster, boot.freq)  # every pair, every resample: once
            rho_jack = None if boot.jack is None else stats.tetrachoric_clustered(x, cluster, boot.jack)

    def alpha_entry(cols: list[str]) -> dict:
        idx = [columns.index(c) for c in cols]
        if tetrachoric:
            detail = stats.ordinal_alpha(wide[cols])
            value = detail["alpha"]
            in_scope = np.isin(pairs_i, idx) & np.isin(pairs_j, idx)

            def kernel(f):
                source = rho_boot if f is boot.freq else rho_jack
                return stats.standardized_alpha(source[:, in_scope].mean(axis=1), len(idx))
        else:
            detail = stats.cronbach_alpha(wide[cols])
            value = detail["alpha"]

            def kernel(f):
                return stats.cronbach_alpha_clustered(x[:, idx], cluster, f)
        summary = boot.ci(value, kernel) if value is not None else {"ci_low": None, "ci_high": None,
                                                                     "warnings": []}
        entry = {"alpha": value, "ci_low": summary["ci_low"], "ci_high": summary["ci_high"], "ci_method": ci_method,
                 "n": int(len(wide)), "n_dialogues": n_dialogues, "k": len(cols),
                 "warnings": list(dict.fromkeys(detail["warnings"] + summary["warnings"]))}
        entry["interpretation"] = stats.interpret(value, "cronbach")
        return entry

    whole = alpha_entry(columns)
    out["cronbach_alpha"] = whole
    if whole["alpha"] is None:
        out["alpha_if_deleted"] = {}
        sentences.put(out, "alpha_if_deleted_note", said(sentences.ALPHA_UNDEFINED))
    elif tetrachoric:
        out["alpha_if_deleted"] = {}
        for i, code in enumerate(columns):
            keep = (pairs_i != i) & (pairs_j != i)
            value = float(stats.standardized_alpha(rho_point[keep].mean(), len(columns) - 1))
            out["alpha_if_deleted"][code] = value if np.isfinite(value) else None
    else:
        out["alpha_if_deleted"] = stats.alpha_if_deleted(wide)
    out["dimensions"] = {}
    for dim in dict.fromkeys(m.dimension for m in binary):
        cols = [m.code for m in binary if m.dimension == dim and m.code in wide.columns]
        entry = alpha_entry(cols)
        entry["name"] = next(m.dimension_name for m in binary if m.dimension == dim)
        out["dimensions"][dim] = entry
    out["per_rater"] = _reliability_per_rater(study, wide, raters, tetrachoric)
    kmo = stats.kmo(wide, correlation=correlation)
    kmo["interpretation"] = stats.interpret(kmo.get("overall"), "kaiser_kmo")
    kmo["n"] = int(len(wide))
    out["kmo"] = kmo
    out["bartlett"] = stats.bartlett_sphericity(wide, correlation=correlation, n=n_dialogues)
    sentences.put(out["bartlett"], "n_note", said(gettext_noop(
        "n = %(n_dialogues)s dialogues (the independent units), not the %(n)s ratings: conservative, since a "
        "dialogue's ratings are correlated"), n_dialogues=n_dialogues, n=len(wide)))
    return out


def _reliability_per_rater(study: Study, wide: pd.DataFrame, raters: np.ndarray, tetrachoric: bool) -> list[dict]:
    """Alpha of each rater's own ratings (one row per dialogue: independent rows, so Feldt's CI holds)."""
    out = []
    for rater in sorted(pd.unique(raters), key=lambda r: study.rater_names.get(r, f"R{r}")):
        rows = wide[raters == rater]
        name = study.rater_names.get(rater, f"R{rater}")
        entry: dict[str, Any] = {"rater": name, "n_dialogues": int(len(rows)), "alpha": None, "ci_low": None,
                                 "ci_high": None, "warnings": []}
        if len(rows) < MIN_RATER_DIALOGUES:
            entry["warnings"].append(said(sentences.FEWER_RATINGS, n=MIN_RATER_DIALOGUES).text)
        elif tetrachoric:
            detail = stats.ordinal_alpha(rows)
            entry.update({"alpha": detail["alpha"], "warnings": detail["warnings"]})
        else:
            detail = stats.cronbach_alpha(rows)
            entry.update({key: detail[key] for key in ("alpha", "ci_low", "ci_high", "warnings")})
        entry["interpretation"] = stats.interpret(entry["alpha"], "cronbach")
        out.append(entry)
    return out


def _models(study: Study, seed: int, n_resamples: int, method: str = "percentile") -> list[dict]:
    """Shi et al., LLM-Mini-CEX, Table 6: per doctor model and dimension, sum of item scores / (items x dialogues),
    in %."""
    binary = {m.code: m for m in study.items if m.response_type == "binary"}
    labels = study.labels
    means = (labels[labels["item"].isin(binary)].groupby(["dialogue", "item"], observed=True)["value"].mean()
             .unstack("item"))
    overall = labels[labels["item"] == "4"].groupby("dialogue")["value"].mean()
    ordered = [m for m in study.items if m.ordered]
    criteria = (labels[labels["item"].isin([m.code for m in ordered])]
                .groupby(["dialogue", "item"], observed=True)["value"].mean().unstack("item"))
    out = []
    dims = list(dict.fromkeys(m.dimension for m in binary.values()))
    # dialogues of the comparison: those with binary labels (as Shi et al., LLM-Mini-CEX), or with scores when there are
    # no binary items
    index = means.index if binary else criteria.index
    models = pd.Series({d: study.dialogue_model.get(d, "(unknown model)") for d in index}, dtype=object)
    for offset, (model, dialogue_ids) in enumerate(models.groupby(models).groups.items()):
        block = means.reindex(list(dialogue_ids))
        boot = _resampling(len(block), n_resamples, seed + offset, method)
        entry = {"model": model, "n_dialogues": int(len(block)), "dimensions": {}}
        for dim in dims:
            cols = [c for c in block.columns if binary[c].dimension == dim]
            per_dialogue = block[cols].mean(axis=1, skipna=True).to_numpy()  # share of items met
            valid = ~np.isnan(per_dialogue)
            values = np.where(valid, per_dialogue, 0.0)
            estimate = 100.0 * values[valid].mean() if valid.any() else None
            weights = valid.astype(float)
            summary = boot.ci(estimate, lambda f, v=values, w=weights: (
                100.0 * stats.weighted_sums(f, v) / stats.weighted_sums(f, w)))
            entry["dimensions"][dim] = {"score_pct": estimate, "ci_low": summary["ci_low"],
                                        "ci_high": summary["ci_high"], "n_items": len(cols)}
        levels = overall.reindex(list(dialogue_ids)).dropna()
        entry["overall_mean"] = float(levels.mean()) if len(levels) else None
        entry["overall_distribution"] = {str(v): int(((levels.round()) == v).sum()) for v in (1, 2, 3)}
        entry["total_scores"] = [float(x) for x in block.sum(axis=1, skipna=True).round(3)]
        entry["criteria"] = _criterion_means(ordered, criteria.reindex(list(dialogue_ids)), boot)
        out.append(entry)
    return sorted(out, key=lambda e: e["model"])


def _criterion_means(ordered: list[ItemMeta], block: pd.DataFrame, boot: Resampling) -> dict:
    """Per levels / scale item: mean score over the model's dialogues (a dialogue's score = mean over its raters),
    with the bootstrap CI over those dialogues."""
    out = {}
    for meta in ordered:
        column = block[meta.code].to_numpy(dtype=float) if meta.code in block.columns else np.full(len(block), np.nan)
        valid = ~np.isnan(column)
        values = np.where(valid, column, 0.0)
        weights = valid.astype(float)
        estimate = float(values[valid].mean()) if valid.any() else None
        summary = boot.ci(estimate, lambda f, v=values, w=weights: (
            stats.weighted_sums(f, v) / stats.weighted_sums(f, w)))
        out[meta.code] = {"text": meta.text, "mean": estimate, "ci_low": summary["ci_low"],
                          "ci_high": summary["ci_high"], "ci_note": summary.get("ci_note"),
                          "n_dialogues": int(valid.sum()),
                          "min": meta.values[0] if meta.values else None,
                          "max": meta.values[-1] if meta.values else None}
    return out


REPLICATES_METHOD = gettext_noop(
    "Repeated answers (Cardenal-Antolin et al., HIVMedQA, Table 2: mean and SD across iterations): per model and "
    "criterion, a text's score is the mean over its raters; the mean is over cases (each case's score the mean over "
    "its replicates); per replicate the mean over the cases it answered, and the SD (ddof 1) of these replicate means "
    "with the 95% t-interval over replicates (mean of the replicate means +- t(0.975, R-1) SD / sqrt(R)). The interval "
    "describes the variation of repeated generation with the cases held fixed, not the sampling of cases.")


def replicate_section(scores: pd.DataFrame, items: Sequence[ItemMeta], case: Mapping[int, str],
                      replicate: Mapping[int, int | None], model: Mapping[int, str]) -> dict | None:
    """Per model and criterion: mean over cases, SD and CI over replicates (:func:`core.stats.replicate_table`).
    ``scores``: rows ``dialogue``, ``item``, ``value`` (labels of several raters, or a judge's answers); ``case``,
    ``replicate``, ``model``: per dialogue. None when no scored text carries a replicate number."""
    ids = scores["dialogue"].unique().tolist() if len(scores) else []
    if not any(replicate.get(d) is not None and case.get(d) for d in ids):
        return None
    per_text = (scores.assign(item=scores["item"].astype(str)).groupby(["dialogue", "item"])["value"].mean()
                .unstack("item"))
    frame = per_text.assign(model=[model.get(d, "(unknown model)") for d in per_text.index],
                            case=[case.get(d) or "" for d in per_text.index],
                            replicate=[replicate.get(d) for d in per_text.index])
    frame = frame[frame["case"] != ""]
    codes = [m.code for m in items if m.code in frame.columns]
    return {"criteria": [{"code": m.code, "text": m.text, "min": m.values[0] if m.values else None,
                          "max": m.values[-1] if m.values else None} for m in items if m.code in codes],
            "models": stats.replicate_table(frame.reset_index(drop=True), codes),
            "n_texts": int(len(frame)), "n_cases": int(frame["case"].nunique()),
            "n_replicates": int(frame["replicate"].nunique()), "method": REPLICATES_METHOD,
            sentences.KEY: {"method": said(REPLICATES_METHOD).stored()}}


def mixed_replicate_warning(labels: pd.DataFrame, case: Mapping[int, str], replicate: Mapping[int, int | None],
                            who: str = "raters") -> str | None:
    """The warning when labels of one case come from different replicates for different raters (their labels are
    then never compared: agreement compares raters only on the same text)."""
    if labels.empty or not any(v is not None for v in replicate.values()):
        return None
    rows = labels[["dialogue", "rater"]].drop_duplicates()
    frame = rows.assign(case=[case.get(d) or "" for d in rows["dialogue"]],
                        replicate=[replicate.get(d) for d in rows["dialogue"]])
    mixed = stats.mixed_replicates(frame)
    if not mixed:
        return None
    example = mixed[0]
    return (f"Labels of {len(mixed)} case(s) come from different replicates for different {who} (e.g. case "
            f"{example['case']}: replicates {', '.join(map(str, example['replicates']))}): agreement compares "
            f"{who} only on the same text, so {who} who rated different replicates of a case are not compared with "
            "each other there.")


def _rater_matrix(study: Study) -> dict:
    """Between every pair of raters, on the binary items they both answered: the mean over items of the per-item
    Cohen's kappa and Gwet's AC1 (each item has its own prevalence, so pooling the 23 items into one table would
    mix them), with the number of items where each is defined, and the pooled % agreement."""
    binary = [m.code for m in study.items if m.response_type == "binary"]
    labels = study.labels[study.labels["item"].isin(binary)]
    raters = sorted(labels["rater"].unique().tolist(), key=lambda r: study.rater_names.get(r, f"R{r}"))
    dialogues = np.sort(labels["dialogue"].unique())
    item_names = labels["item"].astype(object).to_numpy()
    present = set(pd.unique(item_names).tolist())
    items = [c for c in binary if c in present]
    codes = np.full((len(raters), len(items), len(dialogues)), -1, dtype=np.int8)  # 0, 1, -1: small, fast
    if len(labels):
        r = pd.Index(raters).get_indexer(labels["rater"].to_numpy())
        i = pd.Index(items).get_indexer(item_names)
        d = np.searchsorted(dialogues, labels["dialogue"].to_numpy())
        codes[r, i, d] = labels["value"].to_numpy() == 1  # binary items: 0 / 1
    size = len(raters)
    kappa = [[None] * size for _ in range(size)]
    ac1 = [[None] * size for _ in range(size)]
    agree = [[None] * size for _ in range(size)]
    shared = [[0] * size for _ in range(size)]
    items_kappa = [[0] * size for _ in range(size)]
    for a in range(size):
        for b in range(a, size):
            both = (codes[a] >= 0) & (codes[b] >= 0)  # (items, dialogues)
            n = int(both.any(axis=0).sum())
            shared[a][b] = shared[b][a] = n
            if not both.any():
                continue
            agree[a][b] = agree[b][a] = float((codes[a][both] == codes[b][both]).mean())
            if a == b:
                continue
            x, y = np.where(both, codes[a], -1), np.where(both, codes[b], -1)
            with np.errstate(all="ignore"):
                per_item_kappa = np.asarray(stats.cohen_kappa_codes(x, y, 2), dtype=float).reshape(-1)
                # AC1 from the pair's 2 x 2 table per item: what gwet_ac1_counts gives on the dialogues x
                # categories count table, without building it (tests/test_report_kernels.py)
                per_item_ac1 = np.asarray(stats.gwet_ac1_pair_tables(stats.pair_tables(x, y, 2)),
                                          dtype=float).reshape(-1)
            defined = np.isfinite(per_item_kappa)
            items_kappa[a][b] = items_kappa[b][a] = int(defined.sum())
            if defined.any():
                kappa[a][b] = kappa[b][a] = float(per_item_kappa[defined].mean())
            if np.isfinite(per_item_ac1).any():
                ac1[a][b] = ac1[b][a] = float(np.nanmean(per_item_ac1))
    out = {"raters": [study.rater_names.get(r, f"R{r}") for r in raters], "kappa": kappa, "gwet_ac1": ac1,
           "percent_agreement": agree, "n_shared": shared, "n_items_kappa": items_kappa, "n_items": len(items)}
    sentences.put(out, "note", said(gettext_noop(
        "Mean over the binary items of the per-item coefficient between two raters on the dialogues they share; items "
        "where kappa is undefined for the pair (no variation) are left out of its mean, so a pair's kappa can average "
        "fewer items than its AC1 (the API gives the number of items behind each pair's kappa). % agreement is pooled "
        "over items.")))
    return out


def software_versions() -> dict[str, str]:
    result = {"python": platform.python_version()}
    for package in ("numpy", "pandas", "scipy", "statsmodels", "pingouin", "krippendorff", "factor_analyzer",
                    "matplotlib", "Django"):
        try:
            result[package] = version(package)
        except PackageNotFoundError:  # pragma: no cover - all are dependencies
            result[package] = "not installed"
    return result


#: The bootstrap intervals' names (:data:`core.stats.CI_METHOD_NAMES`) as message ids.
CI_NAMES = {"percentile": gettext_noop("percentile bootstrap (Efron 1979)"),
            "basic": gettext_noop("basic (reverse percentile) bootstrap"),
            "bca": gettext_noop("bias-corrected and accelerated (BCa) bootstrap (Efron 1987; Efron & Tibshirani 1993, "
                                "sec. 14.3)")}
_WITH_ARTICLE = {"a dialogue": gettext_noop("a dialogue"), "an answer": gettext_noop("an answer"),
                 "a text": gettext_noop("a text")}


def ci_name(method: str) -> sentences.Said | str:
    """A bootstrap interval's name as a sentence's part (said in the page's language where it is known)."""
    name = stats.CI_METHOD_NAMES[method]
    return said(name) if CI_NAMES.get(method) == name else name


def no_variation() -> sentences.Said | str:
    """How an interval without variation is written (:data:`core.stats.NO_VARIATION`), as a sentence's part."""
    msgid = gettext_noop("not estimable (no variation)")
    return said(msgid) if msgid == stats.NO_VARIATION else stats.NO_VARIATION


def a_word(text: str) -> sentences.Said | str:
    """"a dialogue", "an answer" (:func:`scoring.reports.wording.with_article`) as a sentence's part."""
    return said(_WITH_ARTICLE[text]) if text in _WITH_ARTICLE else text


def _items_said(codes: Sequence[str]) -> sentences.Said:
    """"item 4", "item a and item b", as a sentence's part."""
    out = said(gettext_noop("item %(codes)s"), codes=codes[0])
    for code in codes[1:]:
        out = said(gettext_noop("%(first)s and %(second)s"), first=out, second=said(gettext_noop("item %(codes)s"),
                                                                                   codes=code))
    return out


def bands_said(scale: str) -> sentences.Tagged:
    """:func:`core.stats.bands_text` ("< 0.00 poor, 0.00 to < 0.20 slight, ...") with its band names said in the
    page's language."""
    import re

    parts = []
    for part in stats.bands_text(scale).split(", "):
        below = re.match(r"^< (\S+) (.+)$", part)
        between = re.match(r"^(\S+) to < (\S+) (.+)$", part)
        above = re.match(r"^>= (\S+) (.+)$", part)
        if between:
            parts.append(said(gettext_noop("%(low)s to < %(high)s %(band)s"), low=between[1], high=between[2],
                              band=sentences.band(between[3])))
        elif below:
            parts.append(said(gettext_noop("< %(high)s %(band)s"), high=below[1], band=sentences.band(below[2])))
        elif above:
            parts.append(said(gettext_noop(">= %(low)s %(band)s"), low=above[1], band=sentences.band(above[2])))
        else:
            parts.append(part)
    return sentences.joined(parts, ", ")


def methods(seed: int, n_resamples: int, ci_method: str = "percentile", correlation: str = "pearson", *,
            items: Sequence[ItemMeta] | None = None, words: Mapping[str, str] | None = None) -> dict:
    """The methods section. With ``items`` (the instrument's scored items) only what applies to them is said: no
    dimension scores, reliability or rater matrix without binary items, nothing about levels and scale items
    without them; ``words`` name what is rated and who rates (:mod:`scoring.reports.wording`). Each text in English,
    and as message ids with parameters under ``said`` (:mod:`scoring.reports.sentences`) for the pages."""
    from scoring.reports.wording import with_article, words_for

    w = dict(words or words_for("dialogue"))
    units, unit, raters, rater = (word(w[k]) for k in ("units", "unit", "raters", "rater"))
    model = word(w["model"])
    a_unit = a_word(with_article(w["unit"]))
    types = {m.response_type for m in items} if items is not None else {"binary", "ordinal", "scale"}
    has_binary, has_ordered = "binary" in types, bool(types & set(ORDERED_TYPES))
    levels = [m.code for m in items or [] if m.response_type == "ordinal"]
    correlations = (
        said(gettext_noop(
            "tetrachoric correlations (two-step estimator as R psych::tetrachoric: thresholds from the margins, rho "
            "by maximum likelihood given them, 0.5 added to empty cells; Olsson 1979), so alpha is ordinal alpha "
            "(standardised alpha of the tetrachoric matrix; Zumbo, Gadermann & Zeisser 2007; Gadermann, Guhn & "
            "Zumbo 2012) and KMO and Bartlett use the tetrachoric matrix"))
        if correlation == "tetrachoric" else
        said(gettext_noop(
            "Pearson correlations, which on binary items are phi coefficients (the practice of Shi et al., "
            "LLM-Mini-CEX, Tables 3-4); Cronbach's alpha on binary items is KR-20 (Kuder & Richardson 1937). "
            "Tetrachoric correlations are available as an option")))
    level_parts: list[sentences.Said] = []
    if has_binary:
        level_parts.append(said(gettext_noop("nominal level for binary items")))
    if has_ordered:
        named = (said(gettext_noop(" (item %(codes)s)"), codes=", ".join(levels))
                 if items is not None and levels and len(levels) <= 3 else "")
        level_parts.append(said(gettext_noop("ordinal for levels%(named)s and scale items"), named=named)
                           if "scale" in types else
                           said(gettext_noop("ordinal for levels items%(named)s"), named=named))
    out: dict[str, Any] = {}
    sentences.put(out, "agreement", said(gettext_noop(
        "Per item, among %(raters)s: mean pairwise percent agreement; Fleiss' kappa (Fleiss 1971; Gwet's "
        "generalisation when the number of ratings per %(unit)s varies); Gwet's AC1 (Gwet 2008); Krippendorff's alpha "
        "(krippendorff package; %(levels)s). Only submitted work counts. Bands of kappa and AC1 (Landis & Koch "
        "1977): %(landis_koch)s; of alpha (Krippendorff 2004): %(krippendorff)s; a bound starts the band above it."),
        raters=raters, unit=unit, levels=sentences.joined(level_parts, "; "), landis_koch=bands_said("landis_koch"),
        krippendorff=bands_said("krippendorff")))
    if has_binary:
        overall = (said(gettext_noop("; %(items)s on its own"), items=_items_said(levels)) if levels else "")
        sentences.put(out, "icc", said(gettext_noop(
            "ICC of per-%(unit)s dimension scores (sum of the binary items of a dimension%(overall)s) (Shrout & Fleiss "
            "1979) as pingouin.intraclass_corr computes them, 95%% CIs from the F distribution. When every %(unit)s "
            "has the same raters, all six forms: ICC1 one-way random, ICC2 two-way random absolute agreement, ICC3 "
            "two-way mixed consistency, and their k-rater means. When raters differ between %(units)s, only ICC1 and "
            "ICC1k, the forms that fit that design (ICC2/ICC3 would treat rating slots as raters). Bands (Koo & Li "
            "2016: < .50 poor, .50-.75 moderate, .75-.90 good, > .90 excellent) are applied to the 95%% CI, as Koo & "
            "Li recommend, e.g. 'moderate to good'."), unit=unit, units=units, overall=overall))
        sentences.put(out, "reliability", said(gettext_noop(
            "Cronbach's alpha (pingouin), whole scale, per dimension and if item deleted; KMO and Bartlett's test of "
            "sphericity (factor_analyzer), on the binary items. Unit: one row per rating (%(unit)s x rater), as the "
            "paper's tables; since %(a_unit)s's ratings are not independent, the 95%% CI of alpha is a cluster "
            "bootstrap over %(units)s (a drawn %(unit)s brings all its ratings; Field & Welsh 2007) instead of "
            "Feldt's interval, Bartlett's chi-square uses the number of %(units)s as n, and alpha is also given per "
            "rater (that rater's %(units)s are independent rows; Feldt's 95%% CI). n is stated as ratings, %(units)s "
            "and raters. Correlations: %(correlations)s."),
            unit=unit, units=units, a_unit=a_unit, correlations=correlations))
        sentences.put(out, "rater_matrix", said(gettext_noop(
            "Rater x rater: the mean over binary items of the per-item Cohen's kappa and Gwet's AC1 of the two raters "
            "on the %(units)s they share (items differ in prevalence, so one kappa pooled over items would mix them); "
            "items where kappa is undefined for the pair are left out."), units=units))
    models = []
    if has_binary:
        models.append(said(gettext_noop(
            "Per %(model)s and dimension: sum of item scores / (items x %(units)s), in %% (Shi et al., LLM-Mini-CEX, "
            "Table 6), with each item's score the mean over the %(unit)s's raters."), model=model, units=units,
            unit=unit))
    if has_ordered:
        models.append(said(gettext_noop(
            "Items answered with levels or a numeric scale: mean score per criterion and %(model)s (%(a_unit)s's "
            "score = mean over its raters), with the bootstrap CI over the %(model)s's %(units)s.")
            if has_binary else gettext_noop(
            "Mean score per criterion and %(model)s (%(a_unit)s's score = mean over its raters), with the bootstrap "
            "CI over the %(model)s's %(units)s."), model=model, a_unit=a_unit, units=units))
    if len(models) == 2:
        sentences.put(out, "models", said(gettext_noop("%(first)s %(second)s"), first=models[0], second=models[1]))
    elif models:
        sentences.put(out, "models", models[0])
    else:
        out["models"] = ""
    if has_ordered:
        sentences.put(out, "ordered", said(
            gettext_noop("Items answered with levels or a numeric scale (e.g. 0-5) also get: %(text)s") if has_binary
            else gettext_noop("Every item gets %(text)s"),
            text=said(gettext_noop(
                "Cohen's kappa with quadratic weights (Cohen 1968; statsmodels' definition, weights on the category "
                "index), the mean over pairs of %(raters)s weighted by the %(units)s each pair shares, bootstrap CI; "
                "Gwet's AC2 with quadratic weights (Gwet 2014, Handbook of Inter-Rater Reliability, ch. 3; weights 1 "
                "- (x_k - x_l)^2 / (x_max - x_min)^2 on the scores, every point of the item's scale a category, as "
                "irrCAC) with exact and within-one-point agreement (share of rater pairs), which lead when one score "
                "makes up %(prevalence)s or more of the labels (weighted kappa is then low even when raters nearly "
                "always agree: the prevalence paradox); Krippendorff's alpha at the interval level beside the "
                "ordinal one; the ICC of the item's scores (as pingouin.intraclass_corr; all six Shrout-Fleiss forms "
                "when every %(unit)s has the same raters, else ICC1 and ICC1k; F-distribution CIs); and Bland-Altman "
                "(Bland & Altman 1986) of each %(rater)s against the mean of the other %(raters)s on the same "
                "%(unit)s: per %(rater)s with the paper's CIs (bias +- t s/sqrt(n), limits +- t sqrt(3 s^2/n)), and "
                "pooled over %(raters)s (bias 0 by construction; limits of agreement = bias +- 1.96 SD, CIs from the "
                "bootstrap over %(units)s since %(a_unit)s gives several differences)."),
                raters=raters, units=units, unit=unit, rater=rater, a_unit=a_unit,
                prevalence=f"{EXTREME_PREVALENCE:.0%}")))
    bca = (said(gettext_noop("; BCa acceleration from the leave-one-%(unit)s-out jackknife"), unit=unit)
           if ci_method == "bca" else "")
    sentences.put(out, "ci", said(gettext_noop(
        "%(name)s over %(units)s: %(n)s resamples, seed %(seed)s, 95%% intervals; the same resampled %(units)s are "
        "used for every item%(bca)s. With fewer than about %(small)s %(units)s the report warns that intervals are "
        "rough (the percentile interval undercovers there; Efron & Tibshirani 1993, ch. 14). An interval whose "
        "resamples all give the same value is reported as %(no_variation)s, never [x, x]."),
        name=ci_name(ci_method), units=units, n=n_resamples, seed=seed, bca=bca, small=stats.SMALL_SAMPLE,
        no_variation=no_variation()))
    sentences.put(out, "undefined", said(gettext_noop(
        "A statistic that is undefined for the data (no variation, one rater, n <= p, singular matrix) is reported "
        "as undefined with the reason, never as 0 or 1. Warnings name raters by the names the report shows "
        "(pseudonyms unless names are allowed).")))
    out["software"] = software_versions()
    return out


def single_blas_thread():
    """The report's matrix products on one BLAS thread (as the judge report's, ``scoring.judges.figures``): the
    workers share the machine's cores, and BLAS threads waiting for a busy core spin. On the 2-core machine the
    campaign report of 643,200 labels used 3.6-3.9 s CPU with two threads and 2.9-3.2 s with one, at the same wall
    time (bench/bench_kernels.py)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def compute(study: Study, *, n_resamples: int = N_RESAMPLES, seed: int = 20240501, plots: bool = True,
            progress: Progress | None = None, ci_method: str = "percentile", correlation: str = "pearson") -> dict:
    """The whole report as a JSON-serialisable dict, computed on one BLAS thread (:func:`single_blas_thread`).

    ``ci_method``: "percentile" (default) or "bca" bootstrap intervals; ``correlation``: "pearson" (phi on binary
    items, default) or "tetrachoric" for the reliability and validity section.
    """
    with single_blas_thread():
        return _compute(study, n_resamples=n_resamples, seed=seed, plots=plots, progress=progress,
                        ci_method=ci_method, correlation=correlation)


def _compute(study: Study, *, n_resamples: int, seed: int, plots: bool, progress: Progress | None, ci_method: str,
             correlation: str) -> dict:
    if ci_method not in CI_METHODS:
        raise ReportError(f"Unknown interval method {ci_method!r}; choose {' or '.join(CI_METHODS)}.")
    if correlation not in CORRELATIONS:
        raise ReportError(f"Unknown correlation {correlation!r}; choose {' or '.join(CORRELATIONS)}.")
    started = time.monotonic()
    step = progress or (lambda fraction, message: None)
    labels = study.labels
    dialogue_ids = sorted(labels["dialogue"].unique().tolist())
    dialogue_index = {d: i for i, d in enumerate(dialogue_ids)}
    words = study.words or words_for(study.target)
    report: dict[str, Any] = {
        "title": study.title, "campaigns": [{"id": c.pk, "name": c.name} for c in study.campaigns],
        "fingerprint": study.fingerprint, "n_labels": int(len(labels)), "n_dialogues": len(dialogue_ids),
        "n_raters": int(labels["rater"].nunique()), "names_shown": study.names_shown,
        "methods": methods(seed, n_resamples, ci_method, correlation, items=study.items, words=words),
        "words": words, "has_binary": any(m.response_type == "binary" for m in study.items),
        "has_ordered": any(m.ordered for m in study.items), "seed": seed, "n_resamples": n_resamples,
        "ci_method": ci_method, "correlation": correlation, "warnings": [],
    }
    if labels.empty:
        report["empty"] = True
        report["warnings"] = ["No submitted labels yet: the report fills in as physicians submit dialogues."
                              if study.items else "This report covers binary, levels and scale items, and this "
                              "instrument has none: its labels are in the exports."]
        return report
    small = stats.small_sample_warning(len(dialogue_ids), ci_method, f"{words['unit']}(s)")
    if small:
        report["warnings"].append(small)
    step(0.1, "agreement per item")
    boot = _resampling(len(dialogue_ids), n_resamples, seed, ci_method)
    report["items"] = _item_agreement(study, boot, dialogue_index)
    report["has_ordered"] = any(item.get("ordered") for item in report["items"])
    step(0.5, "intraclass correlations")
    report["icc"] = _icc(study)
    step(0.65, "scale reliability and validity")
    report["reliability"] = _reliability(study, n_resamples, seed, ci_method, correlation, boot)
    step(0.75, "model comparison")
    report["models"] = _models(study, seed, n_resamples, ci_method)
    replicates = replicate_section(study.labels, study.items, study.dialogue_case, study.dialogue_replicate,
                                   study.dialogue_model)
    if replicates is not None:
        report["replicates"] = replicates
    mixed = mixed_replicate_warning(study.labels, study.dialogue_case, study.dialogue_replicate)
    if mixed:
        report["warnings"].append(mixed)
    step(0.85, "rater agreement matrix")
    report["rater_matrix"] = _rater_matrix(study)
    if plots:
        step(0.9, "plots")
        from scoring.reports import plots as plotting

        report["plots"] = plotting.plots_by_language(report)
    report["seconds"] = round(time.monotonic() - started, 2)
    return report
