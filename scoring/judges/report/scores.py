"""Table 6: per doctor model, the physicians' and the judge's scores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from django.utils.translation import gettext_noop

from core import stats
from core.stats import weighted_sums
from scoring.judges.report.common import _f
from scoring.judges.report.figures import ItemData, ReportContext
from scoring.reports import sentences
from scoring.reports.sentences import said


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
            entry["dimensions"]["all"][sentences.KEY] = {
                "name": said(gettext_noop("All binary items (the Average column of Table 6)")).stored()}
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
