"""The whole report: judge vs physicians, the judge's own scores, repeated answers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from core import stats
from scoring.judges import uncertainty
from scoring.judges.estimates import model_estimates
from scoring.judges.report.common import PAPER_RULE, _dedupe, _f, outcome_labels
from scoring.judges.report.figures import ReportContext
from scoring.judges.report.items import _item_arrays, _restrict, check_comparable, item_report
from scoring.judges.report.methods import _run_info, method_titles, methods
from scoring.judges.report.ranking import model_ranking
from scoring.judges.report.scores import model_scores
from scoring.judges.report.summary import _summary
from scoring.judges.report.verdicts import acceptance_rule_said
from scoring.judges.sources import judge_frame, judged_codes
from scoring.judges.sources import scale_version_id as run_scale_version_id
from scoring.judges.verdicts import VerdictSettings
from scoring.reports import sentences
from scoring.reports.agreement import EXTREME_PREVALENCE, mixed_replicate_warning
from scoring.reports.sentences import KEY, put, said, word
from scoring.reports.wording import Words, words_for


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
        warnings.append(said(sentences.ANSWERS_LEFT_OUT, unscored=units.get("unscored", 0),
                             failed=units.get("failed", 0), pending=units.get("pending", 0)).text)
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
        warnings.append(said(sentences.NOTHING_COMPARED, unit=word(W.unit), rater=word(W.rater)).text)
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
    summary[KEY]["model_differences"] = estimates["ranking"][KEY]["text"]
    replicates = judge_replicates(judge, study, codes)
    has_binary = any(item.binary for item in items)
    if not has_binary:  # the paper's 80% rule is the Mini-CEX's (binary items): no other instrument gets it
        for entry in item_entries:
            entry["paper_rule"] = None
    kinds = {"binary": has_binary, "ordered": any(item.ordered for item in items)}
    levels = [item.code for item in items if item.response_type == "ordinal"]
    rule = {**verdict.as_dict(), "text": None, "extreme_prevalence": EXTREME_PREVALENCE,
            "paper_rule": PAPER_RULE if has_binary else None}
    put(rule, "text", acceptance_rule_said(verdict, words, **kinds))
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
        "acceptance_rule": rule,
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
