"""The table of repeated answers that a study archive keeps for every finished judge run whose scored texts carry a
case and a replicate number, with or without a campaign to compare it with: per model and criterion the mean over
cases, the SD (ddof 1) of the replicate means and the 95% t-interval over replicates
(:func:`scoring.reports.agreement.replicate_section`), as the run's page shows it
(:func:`scoring.judges.report.judge_scores`). It is one entry of the report settings per run, one report file, and
rows of ``figures/figures.csv`` that ``verify_study`` recomputes. The table is named as the instrument's source
names it (HIVMedQA's "Table 2"), and the methods call it by what it is (:func:`methods_section`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.utils.translation import gettext_noop

from scoring.reports.agreement import REPLICATES_METHOD
from scoring.reports.sentences import said

#: How an instrument's source names its table of scores over replicates: a word of the scale's ``source`` (its
#: citation) and the table's name there. An instrument from another source names it :data:`GENERIC_NAME`.
SOURCE_TABLES = (("HIVMedQA", "HIVMedQA Table 2"),)
GENERIC_NAME = "scores over replicates"
FINISHED = ("succeeded", "problems")


def table_name(source: str) -> str:
    """The name the instrument's source gives the table ("HIVMedQA Table 2"), else :data:`GENERIC_NAME`."""
    for word, name in SOURCE_TABLES:
        if word.lower() in (source or "").lower():
            return name
    return GENERIC_NAME


def has_replicates(run) -> bool:
    """Whether a scored answer of the run is on a text with a case and a replicate number (the rows
    :func:`scoring.reports.agreement.replicate_section` tabulates)."""
    from annotation.models import Dialogue
    from scoring.judges.models import JudgeResult

    if not Dialogue.objects.filter(corpus=run.corpus_id, replicate__isnull=False).exclude(case="").exists():
        return False  # most corpora: the run's answers are not read
    return (JudgeResult.objects.filter(run=run, status=JudgeResult.Status.DONE, value__isnull=False,
                                       dialogue__replicate__isnull=False)
            .exclude(dialogue__case="").exists())


def settings_entries(runs: dict[str, Any]) -> list[dict]:
    """One settings entry per finished run with replicates, in run order: {"run": key, "table": name}."""
    from annotation.models import ScaleVersion
    from scoring.judges.report import run_scale_version_id

    entries = []
    for key, run in runs.items():
        if run.status in FINISHED and has_replicates(run):
            source = ScaleVersion.objects.select_related("scale").get(pk=run_scale_version_id(run)).scale.source
            entries.append({"run": key, "table": table_name(source)})
    return entries


def tag(entry: dict) -> str:
    """The figures' name: ``replicates run-1 [HIVMedQA Table 2]``."""
    return f"replicates {entry['run']} [{entry['table']}]"


def compute(run, entry: dict, *, stored: bool) -> dict | None:
    """The run's table of repeated answers with the judge's name and the table's; ``stored``: the scores the run
    page keeps (:func:`scoring.judges.figures.stored_judge_scores`), else computed now. None without replicates."""
    from scoring.judges import figures as judge_figures
    from scoring.judges.report import judge_scores

    scores = judge_figures.stored_judge_scores(run) if stored else judge_scores(run)
    table = scores.get("replicates")
    if not table:
        return None
    return {"table": entry["table"], "judge": run.name, **table}


def methods_section(entry: dict, report: dict, source: str, *, number: Callable[[Any], str],
                    table: Callable[[list[str], list[list[str]]], list[str]]) -> dict:
    """The methods' section of one run's table, called by what it is ("Mean score ± SD over 5 replicates per
    model"): models as rows, criteria as columns, each cell "mean ± SD [95% t-interval]". ``number`` and ``table``
    are the methods' number formatter and table writer."""
    replicates = report.get("n_replicates")
    criteria = [c["code"] for c in report.get("criteria", [])]
    title = said(gettext_noop("Mean score ± SD over %(n)s replicates per model"), n=replicates)

    def cell(figure: dict | None) -> str:
        if not figure or figure.get("mean") is None:
            return ""
        if figure.get("sd") is None:
            return f"{number(figure['mean'])} (SD not estimable: {figure.get('n_replicates', 0)} replicate(s))"
        interval = (f" [{number(figure['ci_low'])}, {number(figure['ci_high'])}]"
                    if figure.get("ci_low") is not None and figure.get("ci_high") is not None
                    else f" [{figure.get('ci_note') or 'not estimable'}]")
        return f"{number(figure['mean'])} ± {number(figure['sd'])}{interval}"

    rows = [[m.get("model", "")] + [cell((m.get("criteria") or {}).get(code)) for code in criteria]
            for m in report.get("models", [])]
    lines = table(["Model"] + [f"{code}: mean ± SD [95% CI]" for code in criteria], rows)
    method = str(report.get("method", ""))
    paragraphs = [
        said(gettext_noop("%(title)s (%(table)s), from the scores of judge %(judge)s (%(figure)s): %(cases)s cases x "
                          "%(n)s replicates, %(texts)s texts. %(method)s"),
             title=title, table=report["table"], judge=repr(report.get("judge", "")), figure=entry["figure"],
             cases=report.get("n_cases"), n=replicates, texts=report.get("n_texts"),
             method=said(method) if method == REPLICATES_METHOD else method),
        said(gettext_noop("Figures: %(source)s; rows '%(figure)s ...' of figures/figures.csv; data fingerprint "
                          "%(fingerprint)s."), source=source, figure=entry["figure"],
             fingerprint=entry["fingerprint"][:16])]
    return {"title": said(gettext_noop("%(title)s: judge %(judge)s"), title=title, judge=report.get("judge", "")),
            "paragraphs": paragraphs,
            "tables": [{"title": said(gettext_noop("%(title)s (%(table)s)"), title=title, table=report["table"]),
                        "lines": lines, "source": source}]}
