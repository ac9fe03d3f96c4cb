"""One item's entry of the report, and loading the compared judge answers and physician labels."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from django.utils.translation import gettext

from core import stats
from core.stats import formatting
from scoring.judges import sources
from scoring.judges.report.common import JudgeReportError, _codes
from scoring.judges.report.figures import (
    ItemData,
    ReportContext,
    _ceiling,
    _figure,
    _krippendorff,
    _vs_majority,
    _vs_physicians,
    physician_counts,
)
from scoring.judges.report.levels import _ordered_figures
from scoring.judges.report.verdicts import _coefficient, decide, paper_rule
from scoring.judges.sources import scale_version_id as run_scale_version_id
from scoring.reports import sentences
from scoring.reports.sentences import KEY, said, word
from scoring.reports.wording import Words


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
                                     "coefficient": key, "name": name, "why": why.text, "prevalence": prevalence,
                                     "most_frequent_answer": answer, "most_frequent_count": count,
                                     "n_labels": total,
                                     "most_frequent_text": formatting.share(count, total) if total else None,
                                     KEY: {"why": why.stored()}}
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
        warns.append(said(sentences.NO_UNIT_JUDGED, unit=word(W.unit), rater=word(W.rater)).text)
    entry["warnings"] = warns
    return entry


def source_label(source) -> str:
    """"Run #12" or "Jury #3 (name)": how messages name a scores source (in the active language)."""
    if sources.is_jury(source):
        return gettext("Jury #%(pk)s (%(name)s)") % {"pk": source.pk, "name": source.name}
    return gettext("Run #%(pk)s") % {"pk": source.pk}


def check_comparable(run, campaign) -> None:
    """Raise :class:`JudgeReportError` unless ``campaign`` rates the run's (or jury's) corpus on its scale
    version."""
    label = source_label(run)
    if campaign.corpus_id != run.corpus_id:
        raise JudgeReportError(gettext('%(source)s judged corpus "%(corpus)s" but campaign "%(campaign)s" rates '
                                       'corpus "%(campaign_corpus)s": compare a run with a campaign on the same '
                                       'corpus.') % {"source": label, "corpus": run.corpus, "campaign": campaign,
                                                     "campaign_corpus": campaign.corpus})
    version_id = run_scale_version_id(run)
    if campaign.scale_version_id != version_id:
        from annotation.models import ScaleVersion

        raise JudgeReportError(gettext('%(source)s uses prompts for %(version)s but campaign "%(campaign)s" rates on '
                                       '%(campaign_version)s: compare a run with a campaign on the same scale '
                                       'version.') % {"source": label,
                                                      "version": ScaleVersion.objects.get(pk=version_id),
                                                      "campaign": campaign,
                                                      "campaign_version": campaign.scale_version})


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
