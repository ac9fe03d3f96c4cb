"""Two runs that differ only in mode (per-item vs per-dialogue), side by side."""

from __future__ import annotations

import numpy as np
import pandas as pd
from django.utils.translation import gettext

from core import stats
from scoring.judges import sources
from scoring.judges.report.common import MODE_COMPARISON_IGNORED, JudgeReportError, _dedupe, _f
from scoring.judges.report.figures import _majority, table_figures
from scoring.judges.report.items import _item_arrays, check_comparable, source_label
from scoring.judges.report.methods import _run_info
from scoring.judges.sources import judge_frame, judged_codes
from scoring.judges.sources import scale_version_id as run_scale_version_id


def check_modes(run_a, run_b) -> list[str]:
    """Raise :class:`JudgeReportError` unless the two runs' snapshots differ in mode and in nothing else that can
    change an answer (:data:`MODE_COMPARISON_IGNORED`); returns the keys that were compared. An imported run is
    compared with any other run of its scale version (nothing else is known to compare)."""
    if sources.key(run_a) == sources.key(run_b):
        raise JudgeReportError(gettext("Compare two different runs."))
    if run_a.corpus_id != run_b.corpus_id:
        raise JudgeReportError(gettext("%(a)s and %(b)s judged different corpora.")
                               % {"a": source_label(run_a), "b": source_label(run_b).lower()})
    if run_a.is_imported or run_b.is_imported or sources.is_jury(run_a) or sources.is_jury(run_b):
        # A jury, like an imported judge, goes beside any run or jury of its scale version.
        # An imported judge's scores against another run (the app's own, or another imported judge): nothing in
        # their settings is comparable, so any two runs of one scale version go side by side.
        if run_scale_version_id(run_a) != run_scale_version_id(run_b):
            raise JudgeReportError(gettext("Run #%(a)s and run #%(b)s rate on different scale versions.")
                                   % {"a": run_a.pk, "b": run_b.pk})
        return []
    a, b = run_a.snapshot or {}, run_b.snapshot or {}
    if a.get("mode") == b.get("mode"):
        raise JudgeReportError(gettext("Run #%(a)s and run #%(b)s both use mode %(mode)s: a mode comparison needs "
                                       "one per-item and one per-dialogue run.")
                               % {"a": run_a.pk, "b": run_b.pk, "mode": repr(a.get("mode"))})
    keys = sorted((set(a) | set(b)) - set(MODE_COMPARISON_IGNORED) - {"mode"})
    differing = [k for k in keys if a.get(k) != b.get(k)]
    if differing:
        detail = "; ".join(f"{k}: {a.get(k)!r} vs {b.get(k)!r}" for k in differing)
        raise JudgeReportError(gettext("Run #%(a)s and run #%(b)s differ in more than the mode (%(detail)s); a mode "
                                       "comparison needs configurations that are the same apart from mode and name.")
                               % {"a": run_a.pk, "b": run_b.pk, "detail": detail})
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
