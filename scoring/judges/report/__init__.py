"""Judge vs physicians: can an LLM judge replace the physicians on an item? (DESIGN.md section 4)

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


The sections live in modules: :mod:`.common` (outcomes, constants, small helpers), :mod:`.figures` (the
per-item figures on arrays), :mod:`.levels` (items with ordered scores), :mod:`.verdicts` (the rule and each
item's verdict), :mod:`.items` (one item's entry and loading the compared data), :mod:`.scores` (Table 6),
:mod:`.ranking` (the model ranking), :mod:`.methods`, :mod:`.summary`, :mod:`.build` (the whole report) and
:mod:`.modes` (per-mode comparison); this package's names are their callers' one way in.
"""

from __future__ import annotations

from scoring.judges.report.build import judge_replicates, judge_scores, judge_vs_physicians
from scoring.judges.report.common import (
    _TOL,
    AVERAGING,
    CEILING_AVERAGING,
    GWET_AC2,
    KEEP,
    LANDIS_KOCH,
    MODE_COMPARISON_IGNORED,
    NON_INFERIORITY,
    NOT_ENOUGH,
    ORDERED_COEFFICIENTS,
    OUTCOME_KEYS,
    OUTCOMES,
    PAPER_RULE,
    REPLACE,
    UNRELIABLE,
    WEIGHTED_KAPPA,
    JudgeReportError,
    _answer,
    _codes,
    _dedupe,
    _f,
    _floor_band,
    _fmt_ci,
    _fmt_signed_ci,
    _percents,
    averaging,
    ceiling_averaging,
    outcome_labels,
)
from scoring.judges.report.figures import (
    ItemData,
    ReportContext,
    Reps,
    _ceiling,
    _figure,
    _krippendorff,
    _majority,
    _pairwise,
    _vs_majority,
    _vs_physicians,
    physician_counts,
    table_figures,
)
from scoring.judges.report.items import _item_arrays, _restrict, check_comparable, item_report, source_label
from scoring.judges.report.levels import _icc_with_judge, _lower_median, _ordered_figures
from scoring.judges.report.methods import METHOD_TITLES, _levels_text, _run_info, method_titles, methods, provenance
from scoring.judges.report.modes import check_modes, compare_modes
from scoring.judges.report.ranking import _model_score_columns, kendall_tau_b, model_ranking
from scoring.judges.report.scores import _criterion_scores, model_scores
from scoring.judges.report.summary import _summary
from scoring.judges.report.verdicts import (
    _coefficient,
    _lower_limit,
    _undefined_because,
    acceptance_rule_text,
    decide,
    non_inferiority_not_shown,
    paper_rule,
)
from scoring.judges.sources import judge_frame, judged_codes
from scoring.judges.sources import scale_version_id as run_scale_version_id
from scoring.judges.verdicts import VerdictSettings

__all__ = [
    'VerdictSettings', 'judge_frame', 'judged_codes', 'run_scale_version_id', 'REPLACE', 'KEEP', 'UNRELIABLE',
    'NOT_ENOUGH', 'OUTCOMES', 'OUTCOME_KEYS', 'outcome_labels', 'PAPER_RULE', 'LANDIS_KOCH', 'NON_INFERIORITY',
    'averaging', 'ceiling_averaging', 'AVERAGING', 'CEILING_AVERAGING', 'MODE_COMPARISON_IGNORED', '_TOL',
    'WEIGHTED_KAPPA', 'GWET_AC2', 'ORDERED_COEFFICIENTS', 'JudgeReportError', '_f', '_dedupe', '_codes',
    '_floor_band', '_fmt_ci', '_answer', '_percents', '_fmt_signed_ci', 'table_figures', 'ItemData',
    'ReportContext', 'Reps', '_figure', '_majority', '_vs_majority', '_pairwise', '_vs_physicians', '_ceiling',
    '_krippendorff', 'physician_counts', '_lower_median', '_ordered_figures',
    '_icc_with_judge', 'acceptance_rule_text', '_coefficient', '_lower_limit', '_undefined_because', 'decide',
    'non_inferiority_not_shown', 'paper_rule', 'item_report', 'source_label', 'check_comparable', '_item_arrays',
    '_restrict', '_criterion_scores', 'model_scores', '_model_score_columns', 'kendall_tau_b', 'model_ranking',
    '_run_info', 'provenance', 'method_titles', 'METHOD_TITLES', '_levels_text', 'methods', '_summary',
    'judge_vs_physicians', 'judge_scores', 'judge_replicates', 'check_modes', 'compare_modes',
]

