"""Does the judge rank the doctor models as the physicians do? Kendall's tau-b with a stratified bootstrap CI."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from django.utils.translation import gettext_noop

from core import stats
from core.stats import weighted_sums
from scoring.judges.report.common import _TOL, _f
from scoring.judges.report.figures import ItemData, ReportContext, _figure
from scoring.reports import sentences
from scoring.reports.sentences import Said, said, word


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


def _scope_name(key: str, name: str) -> Said | None:
    """A ranking scope's name as a sentence where the report wrote it (a dimension's name is the instrument's)."""
    fixed = {"All binary items": gettext_noop("All binary items"),
             "All criteria (scores rescaled to 0-1)": gettext_noop("All criteria (scores rescaled to 0-1)")}
    if name in fixed:
        return said(fixed[name])
    if name == f"Item {key} (mean level)":
        return said(gettext_noop("Item %(code)s (mean level)"), code=key)
    return None


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
        out["warnings"].append(said(sentences.RANKING_FEW_MODELS, models=word(W.models), n=len(names)).text)
        return out
    if len(names) == 2:
        out["warnings"].append(said(sentences.RANKING_TWO_MODELS, models=word(W.models)).text)
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
        name_said = _scope_name(key, name)
        if name_said is not None:
            entry.setdefault(sentences.KEY, {})["name"] = name_said.stored()
        defined = np.isfinite(h_scores) & np.isfinite(j_scores)
        reasons = []
        value = None
        if defined.sum() < 2:
            reasons.append(said(sentences.RANKING_FEW_SCORED, raters=word(W.raters)).text)
        else:
            value = _f(kendall_tau_b(h_scores[defined], j_scores[defined]))  # = scipy's kendalltau, tested
            if value is None:
                reasons.append(sentences.RANKING_TIES)

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
