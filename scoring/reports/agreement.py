"""Agreement, reliability and model-comparison reports for annotation campaigns.

``load_study`` reads the submitted labels of one or more campaigns into a DataFrame; ``compute`` turns it
into a plain, JSON-serialisable dict with every figure, its CI, n, an interpretation band and its source.
The statistics themselves come from ``scoring.stats``; this module only arranges the data.
"""

from __future__ import annotations

import hashlib
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np
import pandas as pd
from django.db.models import Count, Max

from annotation.models import Assignment, Campaign, Dialogue, Item, Label, RaterProfile
from scoring import stats

N_RESAMPLES = 1000
CI_METHOD = "percentile bootstrap over dialogues"
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


def study_fingerprint(campaigns: Sequence[Campaign]) -> str:
    """Changes whenever a label, a submission or a return in these campaigns changes."""
    ids = sorted(c.pk for c in campaigns)
    labels = Label.objects.filter(campaign_id__in=ids).aggregate(n=Count("id"), last=Max("updated_at"))
    work = Assignment.objects.filter(campaign_id__in=ids).aggregate(n=Count("id"), last=Max("updated_at"))
    raw = f"{ids}|{labels['n']}|{labels['last']}|{work['n']}|{work['last']}"
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


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
    items_qs = (Item.objects.filter(version_id=version_id, response_type__in=["binary", "ordinal"])
                .select_related("dimension").prefetch_related("levels").order_by("order"))
    items = [ItemMeta(code=i.code, text=i.text_en, dimension=i.dimension.code, dimension_name=i.dimension.name_en,
                      response_type=i.response_type, values=i.allowed_values()) for i in items_qs]
    code_of = {i.pk: i.code for i in items_qs}
    # Only the items above: scale and free-text items are not (yet) analysed here; they are in the exports.
    rows = (Label.objects.filter(campaign__in=campaigns, value__isnull=False, item_id__in=list(code_of),
                                 assignment__status=Assignment.Status.SUBMITTED)
            .values_list("dialogue_id", "rater_id", "item_id", "value"))
    arr = np.fromiter((v for row in rows.iterator(chunk_size=20000) for v in row), dtype=np.int64).reshape(-1, 4)
    item_ids = sorted(code_of)
    labels = pd.DataFrame({
        "dialogue": arr[:, 0], "rater": arr[:, 1],
        "item": pd.Categorical.from_codes(np.searchsorted(item_ids, arr[:, 2]),
                                          categories=[code_of[k] for k in item_ids]),
        "value": arr[:, 3]})
    dialogue_ids = labels["dialogue"].unique().tolist()
    meta = Dialogue.objects.filter(pk__in=dialogue_ids).values_list("pk", "source_model", "external_id")
    dialogue_model = {pk: model or "(unknown model)" for pk, model, _ in meta}
    dialogue_external = {pk: ext for pk, _, ext in meta}
    rater_ids = labels["rater"].unique().tolist()
    if names:
        from django.contrib.auth import get_user_model

        rater_names = dict(get_user_model().objects.filter(pk__in=rater_ids).values_list("pk", "username"))
    else:
        rater_names = {}
        for rid in rater_ids:
            profile = RaterProfile.objects.filter(user_id=rid).first()
            if profile is None:
                from django.contrib.auth import get_user_model

                profile = RaterProfile.for_user(get_user_model().objects.get(pk=rid))
            rater_names[rid] = profile.pseudonym
    return Study(title=title or ", ".join(c.name for c in campaigns), campaigns=campaigns, labels=labels,
                 items=items, dialogue_model=dialogue_model, dialogue_external=dialogue_external,
                 rater_names=rater_names, fingerprint=fingerprint, names_shown=names)


# ---------------------------------------------------------------------------------------------------------------
# computation
# ---------------------------------------------------------------------------------------------------------------
def _ci(estimate: Any, replicates: np.ndarray, seed: int, warnings: list[str] | None = None) -> dict:
    return stats.bootstrap_summary(estimate, replicates, seed=seed, n_resamples=len(replicates),
                                   warnings=warnings)


def _figure(detail: dict, boot: dict, scale: str | None) -> dict:
    value = detail.get("value")
    out = {"value": value, "ci_low": boot["ci_low"], "ci_high": boot["ci_high"],
           "warnings": list(dict.fromkeys(detail.get("warnings", []) + boot["warnings"]))}
    if scale:
        out["interpretation"] = stats.interpret(value, scale)
    return out


def _item_agreement(study: Study, freq: np.ndarray, dialogue_index: dict[int, int], seed: int) -> list[dict]:
    """Per item: % agreement, Fleiss' kappa, Gwet's AC1 and Krippendorff's alpha with bootstrap CIs."""
    result = []
    by_item = {code: frame for code, frame in study.labels.groupby("item", observed=False)}
    n_dialogues = len(dialogue_index)
    for meta in study.items:
        frame = by_item.get(meta.code, study.labels.iloc[0:0])
        wide = frame.pivot_table(index="dialogue", columns="rater", values="value", aggfunc="first")
        entry: dict[str, Any] = {"code": meta.code, "text": meta.text, "dimension": meta.dimension,
                                 "level": meta.level, "n_labels": int(len(frame)), "n_dialogues": int(len(wide)),
                                 "n_raters": int(wide.shape[1])}
        codes, _ = stats.encode_labels(wide.to_numpy(), categories=meta.values) if len(wide) else (
            np.empty((0, 0), dtype=np.int64), meta.values)
        table_part = stats.count_table(codes, len(meta.values)) if len(wide) else np.empty((0, len(meta.values)))
        table = np.zeros((n_dialogues, len(meta.values)))
        if len(wide):
            table[[dialogue_index[d] for d in wide.index]] = table_part
        pa = stats.percent_agreement_detail(wide)
        fleiss = stats.fleiss_kappa_detail(wide, categories=meta.values)
        ac1 = stats.gwet_ac1_detail(wide, categories=meta.values)
        kripp = stats.krippendorff_alpha_detail(wide.T, level=meta.level, value_domain=meta.values)
        entry["percent_agreement"] = _figure(pa, _ci(pa["value"], stats.percent_agreement_counts(table, freq),
                                                     seed), None)
        entry["fleiss_kappa"] = _figure(fleiss, _ci(fleiss["value"], stats.fleiss_kappa_counts(table, freq), seed),
                                        "landis_koch")
        entry["gwet_ac1"] = _figure(ac1, _ci(ac1["value"], stats.gwet_ac1_counts(table, freq), seed),
                                    "landis_koch")
        entry["krippendorff_alpha"] = _figure(
            kripp, _ci(kripp["value"], stats.krippendorff_alpha_counts(table, meta.values, meta.level, freq), seed),
            "krippendorff")
        entry["prevalence"] = (None if not len(frame) else
                               {str(v): float((frame["value"] == v).mean()) for v in meta.values})
        result.append(entry)
    return result


def _dimension_scores(study: Study) -> pd.DataFrame:
    """Per (dialogue, rater): the sum of binary item values of each dimension, and item 4 ("overall")."""
    items = {m.code: m for m in study.items}
    labels = study.labels.assign(dimension=study.labels["item"].map(
        lambda c: items[c].dimension if items[c].response_type == "binary" else "overall").astype(str))
    sums = labels.pivot_table(index=["dialogue", "rater"], columns="dimension", values="value", aggfunc="sum")
    return sums


def _icc(study: Study) -> dict:
    """ICC (all six Shrout-Fleiss forms) of per-dialogue dimension scores."""
    scores = _dimension_scores(study)
    if scores.empty:
        return {"design": None, "dimensions": {}, "warnings": ["No submitted labels yet."]}
    per_dialogue = scores.reset_index().groupby("dialogue")["rater"].apply(lambda r: tuple(sorted(r)))
    k = int(per_dialogue.map(len).mode().iloc[0])
    complete = per_dialogue[per_dialogue.map(len) == k]
    crossed = complete.nunique() == 1
    warnings = []
    if len(complete) < len(per_dialogue):
        warnings.append(f"{len(per_dialogue) - len(complete)} dialogue(s) with fewer or more than {k} raters "
                        "were left out of the ICC (it needs the same number of ratings per dialogue).")
    frame = scores.reset_index()
    frame = frame[frame["dialogue"].isin(complete.index)]
    if crossed:
        frame["slot"] = frame["rater"]
        design = "crossed: every dialogue rated by the same raters"
    else:
        frame = frame.sort_values(["dialogue", "rater"])
        frame["slot"] = frame.groupby("dialogue").cumcount() + 1
        design = (f"not crossed: raters differ between dialogues, so raters are taken as rating slots 1..{k}; "
                  "ICC1 (one-way) is the form that matches this design")
        warnings.append("Raters differ between dialogues: ICC2/ICC3 treat rating slots as raters; prefer ICC1.")
    dims = {}
    names = {m.dimension: m.dimension_name for m in study.items if m.response_type == "binary"}
    names["overall"] = "Overall clinical competence (item 4)"
    for column in scores.columns:
        result = stats.icc(frame[["dialogue", "slot", column]].dropna(), targets="dialogue", raters="slot",
                           ratings=column)
        for form in ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k"):
            if isinstance(result.get(form), dict):
                result[form]["interpretation"] = stats.interpret(result[form].get("icc"), "koo_li_icc")
        dims[str(column)] = {"name": names.get(str(column), str(column)), **result}
    return {"design": design, "raters_per_dialogue": k, "dimensions": dims, "warnings": warnings}


def _reliability(study: Study) -> dict:
    """Cronbach's alpha (whole, per dimension, if item deleted), KMO and Bartlett on the binary items."""
    binary = [m for m in study.items if m.response_type == "binary"]
    labels = study.labels[study.labels["item"].isin([m.code for m in binary])]
    wide = labels.pivot_table(index=["dialogue", "rater"], columns="item", values="value", aggfunc="first",
                              observed=True)
    wide = wide[[m.code for m in binary if m.code in wide.columns]].dropna()
    out: dict[str, Any] = {"n_ratings": int(len(wide)), "items": list(wide.columns)}
    if wide.empty:
        out["warnings"] = ["No complete ratings yet."]
        return out
    whole = stats.cronbach_alpha(wide)
    whole["interpretation"] = stats.interpret(whole.get("alpha"), "cronbach")
    out["cronbach_alpha"] = whole
    out["alpha_if_deleted"] = stats.alpha_if_deleted(wide)
    out["dimensions"] = {}
    for dim in dict.fromkeys(m.dimension for m in binary):
        cols = [m.code for m in binary if m.dimension == dim and m.code in wide.columns]
        entry = stats.cronbach_alpha(wide[cols])
        entry["interpretation"] = stats.interpret(entry.get("alpha"), "cronbach")
        entry["name"] = next(m.dimension_name for m in binary if m.dimension == dim)
        out["dimensions"][dim] = entry
    kmo = stats.kmo(wide)
    kmo["interpretation"] = stats.interpret(kmo.get("overall"), "kaiser_kmo")
    out["kmo"] = kmo
    out["bartlett"] = stats.bartlett_sphericity(wide)
    return out


def _models(study: Study, seed: int, n_resamples: int) -> list[dict]:
    """seeds/000 Table 6: per doctor model and dimension, sum of item scores / (items x dialogues) in %."""
    binary = {m.code: m for m in study.items if m.response_type == "binary"}
    labels = study.labels
    means = (labels[labels["item"].isin(binary)].groupby(["dialogue", "item"], observed=True)["value"].mean()
             .unstack("item"))
    overall = labels[labels["item"] == "4"].groupby("dialogue")["value"].mean()
    out = []
    dims = list(dict.fromkeys(m.dimension for m in binary.values()))
    models = pd.Series({d: study.dialogue_model.get(d, "(unknown model)") for d in means.index}, dtype=object)
    for offset, (model, dialogue_ids) in enumerate(models.groupby(models).groups.items()):
        block = means.loc[list(dialogue_ids)]
        indices = stats.bootstrap_indices(len(block), n_resamples, seed + offset)
        freq = stats.bootstrap_freq(indices, len(block))
        entry = {"model": model, "n_dialogues": int(len(block)), "dimensions": {}}
        for dim in dims:
            cols = [c for c in block.columns if binary[c].dimension == dim]
            per_dialogue = block[cols].mean(axis=1, skipna=True).to_numpy()  # share of items met
            valid = ~np.isnan(per_dialogue)
            values = np.where(valid, per_dialogue, 0.0)
            estimate = 100.0 * values[valid].mean() if valid.any() else None
            with np.errstate(invalid="ignore", divide="ignore"):
                reps = 100.0 * (freq @ values) / (freq @ valid.astype(float))
            boot = stats.bootstrap_summary(estimate, reps, seed=seed + offset, n_resamples=n_resamples)
            entry["dimensions"][dim] = {"score_pct": estimate, "ci_low": boot["ci_low"], "ci_high": boot["ci_high"],
                                        "n_items": len(cols)}
        levels = overall.reindex(list(dialogue_ids)).dropna()
        entry["overall_mean"] = float(levels.mean()) if len(levels) else None
        entry["overall_distribution"] = {str(v): int(((levels.round()) == v).sum()) for v in (1, 2, 3)}
        entry["total_scores"] = [float(x) for x in block.sum(axis=1, skipna=True).round(3)]
        out.append(entry)
    return sorted(out, key=lambda e: e["model"])


def _rater_matrix(study: Study) -> dict:
    """Cohen's kappa and % agreement between every pair of raters on the binary items they share."""
    binary = [m.code for m in study.items if m.response_type == "binary"]
    labels = study.labels[study.labels["item"].isin(binary)]
    wide = labels.pivot_table(index=["dialogue", "item"], columns="rater", values="value", aggfunc="first",
                              observed=True)
    raters = sorted(wide.columns, key=lambda r: study.rater_names.get(r, str(r)))
    size = len(raters)
    kappa = [[None] * size for _ in range(size)]
    agree = [[None] * size for _ in range(size)]
    shared = [[0] * size for _ in range(size)]
    values = {r: wide[r].to_numpy() for r in raters}
    for i, a in enumerate(raters):
        for j in range(i, size):
            b = raters[j]
            both = ~np.isnan(values[a]) & ~np.isnan(values[b])
            n = int(both.sum())
            shared[i][j] = shared[j][i] = n
            if n == 0:
                continue
            x, y = values[a][both].astype(int), values[b][both].astype(int)
            agree[i][j] = agree[j][i] = float((x == y).mean())
            if i != j:
                k = float(stats.cohen_kappa_codes(x, y, 2))
                kappa[i][j] = kappa[j][i] = k if np.isfinite(k) else None
    return {"raters": [study.rater_names.get(r, str(r)) for r in raters], "kappa": kappa,
            "percent_agreement": agree, "n_shared": shared}


def software_versions() -> dict[str, str]:
    result = {"python": platform.python_version()}
    for package in ("numpy", "pandas", "scipy", "statsmodels", "pingouin", "krippendorff", "factor_analyzer",
                    "matplotlib", "Django"):
        try:
            result[package] = version(package)
        except PackageNotFoundError:  # pragma: no cover - all are dependencies
            result[package] = "not installed"
    return result


def methods(seed: int, n_resamples: int) -> dict:
    return {
        "agreement": "Per item, among physicians: mean pairwise percent agreement; Fleiss' kappa (Fleiss 1971; "
                     "Gwet's generalisation when the number of ratings per dialogue varies); Gwet's AC1 (Gwet "
                     "2008); Krippendorff's alpha (krippendorff package; nominal level for binary items, ordinal "
                     "for item 4). Only submitted work counts.",
        "icc": "ICC of per-dialogue dimension scores (sum of the binary items of a dimension; item 4 on its own), "
               "all six Shrout-Fleiss (1979) forms from pingouin.intraclass_corr: ICC1 one-way random, ICC2 "
               "two-way random absolute agreement, ICC3 two-way mixed consistency, and their k-rater means; 95% "
               "CIs from the F distribution.",
        "reliability": "Cronbach's alpha with Feldt's 95% CI (pingouin; pairwise deletion), whole scale, per "
                       "dimension and if item deleted; KMO and Bartlett's test of sphericity (factor_analyzer). "
                       "Computed on the 23 binary items, one row per dialogue x rater.",
        "models": "Per doctor model and dimension: sum of item scores / (items x dialogues), in % (seeds/000 "
                  "Table 6), with each item's score the mean over the dialogue's raters.",
        "ci": f"{CI_METHOD}: {n_resamples} resamples, seed {seed}, 95% percentile intervals; the same resampled "
              "dialogues are used for every item.",
        "undefined": "A statistic that is undefined for the data (no variation, one rater, n <= p, singular "
                     "matrix) is reported as undefined with the reason, never as 0 or 1.",
        "software": software_versions(),
    }


def compute(study: Study, *, n_resamples: int = N_RESAMPLES, seed: int = 20240501, plots: bool = True,
            progress: Progress | None = None) -> dict:
    """The whole report as a JSON-serialisable dict."""
    started = time.monotonic()
    step = progress or (lambda fraction, message: None)
    labels = study.labels
    dialogue_ids = sorted(labels["dialogue"].unique().tolist())
    dialogue_index = {d: i for i, d in enumerate(dialogue_ids)}
    report: dict[str, Any] = {
        "title": study.title, "campaigns": [{"id": c.pk, "name": c.name} for c in study.campaigns],
        "fingerprint": study.fingerprint, "n_labels": int(len(labels)), "n_dialogues": len(dialogue_ids),
        "n_raters": int(labels["rater"].nunique()), "names_shown": study.names_shown,
        "methods": methods(seed, n_resamples), "seed": seed, "n_resamples": n_resamples,
    }
    if labels.empty:
        report["empty"] = True
        report["warnings"] = ["No submitted labels yet: the report fills in as physicians submit dialogues."
                              if study.items else "This report covers binary and levels items, and this "
                              "instrument has none: its labels are in the exports."]
        return report
    step(0.1, "agreement per item")
    freq = stats.bootstrap_freq(stats.bootstrap_indices(len(dialogue_ids), n_resamples, seed), len(dialogue_ids))
    report["items"] = _item_agreement(study, freq, dialogue_index, seed)
    step(0.5, "intraclass correlations")
    report["icc"] = _icc(study)
    step(0.65, "scale reliability and validity")
    report["reliability"] = _reliability(study)
    step(0.75, "model comparison")
    report["models"] = _models(study, seed, n_resamples)
    step(0.85, "rater agreement matrix")
    report["rater_matrix"] = _rater_matrix(study)
    if plots:
        step(0.9, "plots")
        from scoring.reports import plots as plotting

        report["plots"] = plotting.all_plots(report)
    report["seconds"] = round(time.monotonic() - started, 2)
    return report
