"""A preference study's answers as rows: the humans' submitted votes and the CSV long format of its export (one row
per rater or judge, comparison and criterion). Plain reads of the answers: a download imports no statistics library
(pandas, scipy) before it reads them. The analysis (:mod:`scoring.preference.analysis`) reads the votes from here."""

from __future__ import annotations

import csv
import io

from core.site.spreadsheet import safe_dict
from projects.pseudonyms import pseudonyms
from scoring.preference import judging as preference_judging
from scoring.preference.models import (
    PreferenceAnswer,
    PreferencePair,
    PreferenceStudy,
    PreferenceTask,
    PreferenceVerdict,
)


def rater_names(study: PreferenceStudy, user_ids, *, pseudonymous: bool = False) -> dict[int, str]:
    """The project's pseudonyms unless the study allows names (and ``pseudonymous`` does not ask for them
    anyway)."""
    from django.contrib.auth import get_user_model

    ids = list(set(user_ids))
    if study.allow_names and not pseudonymous:
        return {u.pk: u.get_full_name() or u.username for u in get_user_model().objects.filter(pk__in=ids)}
    return pseudonyms(study.project_id, ids)


def human_votes(study: PreferenceStudy) -> list[dict]:
    """Submitted human answers: pair, item, rater, criterion, side choice, and the outcome for the pair."""
    answers = (PreferenceAnswer.objects.filter(task__study=study, task__status=PreferenceTask.Status.SUBMITTED,
                                               task__pair__item__deleted_at__isnull=True)
               .exclude(choice="")
               .select_related("task", "criterion")
               .order_by("task__pair_id", "task__rater_id", "criterion__order"))
    rows = []
    for ans in answers:
        task = ans.task
        rows.append({"pair": task.pair_id, "rater": task.rater_id, "criterion": ans.criterion.code,
                     "choice": ans.choice, "swapped": task.swapped, "comment": ans.comment,
                     "outcome": preference_judging.to_outcome(ans.choice, not task.swapped),
                     "task": task.pk, "at": ans.updated_at})
    return rows


def pair_sources(study: PreferenceStudy) -> dict[int, dict]:
    return {p.pk: {"item": p.item.external_id, "first": p.first.source.label, "second": p.second.source.label}
            for p in PreferencePair.objects.filter(study=study).select_related("item", "first__source",
                                                                              "second__source")}


def export_rows(study: PreferenceStudy, *, pseudonymous: bool = False) -> list[dict]:
    """The long format: one row per rater (or judge and order), comparison and criterion. Source columns are
    filled only after unblinding; before it they are absent. Raters are named as :func:`rater_names` says
    (``pseudonymous``: always by pseudonym, as the study archive has them)."""
    study = PreferenceStudy.objects.get(pk=study.pk)
    reveal = study.is_unblinded
    pairs = pair_sources(study) if reveal else {}
    rows = human_votes(study)
    names = rater_names(study, [r["rater"] for r in rows], pseudonymous=pseudonymous)
    items = dict(PreferencePair.objects.filter(study=study).values_list("pk", "item__external_id"))
    out = []
    for r in rows:
        row = {"study": study.name, "item": items.get(r["pair"], ""), "comparison": r["pair"],
               "rater": names[r["rater"]], "rater_kind": "human", "order": "", "criterion": r["criterion"],
               "choice": r["choice"], "comment": r["comment"], "answered_at": r["at"].isoformat()}
        if reveal:
            first, second = pairs[r["pair"]]["first"], pairs[r["pair"]]["second"]
            a, b = (second, first) if r["swapped"] else (first, second)
            row.update({"source_a": a, "source_b": b,
                        "preferred_source": {"A": a, "B": b, "tie": "tie"}[r["choice"]]})
        out.append(row)
    verdicts = (PreferenceVerdict.objects.filter(run__study=study, status=PreferenceVerdict.Status.DONE)
                .select_related("run").order_by("run_id", "pair_id", "order"))
    for v in verdicts:
        for code, choice in sorted(v.choices.items()):
            row = {"study": study.name, "item": items.get(v.pair_id, ""), "comparison": v.pair_id,
                   "rater": f"judge-run-{v.run_id}", "rater_kind": "judge", "order": v.order, "criterion": code,
                   "choice": choice, "comment": "", "answered_at": v.updated_at.isoformat()}
            if reveal:
                first, second = pairs[v.pair_id]["first"], pairs[v.pair_id]["second"]
                a, b = (first, second) if v.order == "forward" else (second, first)
                row.update({"source_a": a, "source_b": b,
                            "preferred_source": {"A": a, "B": b, "tie": "tie"}[choice]})
            out.append(row)
    return out


EXPORT_COLUMNS = ["study", "item", "comparison", "rater", "rater_kind", "order", "criterion", "choice", "comment",
                  "answered_at"]


SOURCE_COLUMNS = ["source_a", "source_b", "preferred_source"]


def export_csv(study: PreferenceStudy) -> str:
    study = PreferenceStudy.objects.get(pk=study.pk)
    columns = EXPORT_COLUMNS + (SOURCE_COLUMNS if study.is_unblinded else [])
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(safe_dict(row) for row in export_rows(study))  # a comment may start with "="
    return buffer.getvalue()

