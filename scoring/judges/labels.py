"""LLM judge labels in the label exports (``export_labels``, the export pages): rows with ``rater_kind`` "judge".

Importing this module registers :func:`judge_label_rows` in :data:`scoring.reports.exports.LABEL_SOURCES` (once), so
``exports.label_rows`` yields, after the physicians' labels, every scored judge answer on the corpus:

* every judge run on the corpus whatever its status (a paused, cancelled or failed run's scored answers are final
  answers too; ``judge_run`` tells the runs apart), in run order;
* only results with status ``done`` and a value (unscored, failed and pending answers are not labels);
* with a ``campaign``, only dialogues in that campaign's scope (``Campaign.dialogues()``: its split, model and
  language filters, privacy-excluded and deleted dialogues left out); without, every dialogue of the corpus that
  is not deleted.

Row format (:data:`scoring.reports.exports.COLUMNS`): ``rater`` = :func:`scoring.judges.names.judge_rater_name` (the
configuration's name as the run recorded it, plus the run number: stable even if the configuration is renamed later),
``rater_kind``
"judge", ``judge_run`` = the run id as text, ``created`` = the result's ``updated_at`` in ISO 8601 UTC.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from scoring.judges.names import judge_rater_name
from scoring.reports.exports import CHUNK_SIZE, JUDGE, iso_utc, register_label_source


def judge_label_rows(corpus, campaign=None, *, names: bool = False) -> Iterator[dict[str, Any]]:
    """Scored judge answers on ``corpus`` (optionally only ``campaign``'s dialogues) in the export row format,
    ordered by run, dialogue external id and item order. ``names`` is accepted for the source protocol; judges
    have no personal names to hide."""
    from scoring.judges.models import JudgeResult, JudgeRun

    runs = JudgeRun.objects.filter(corpus=corpus)  # the corpus's project only
    for run in runs.select_related("config").order_by("pk"):
        qs = JudgeResult.objects.filter(run=run, status=JudgeResult.Status.DONE, value__isnull=False,
                                        dialogue__deleted_at__isnull=True)
        if campaign is not None:
            qs = qs.filter(dialogue__in=campaign.dialogues().values("pk"))
        rater = judge_rater_name(run)
        run_id = str(run.pk)
        rows = qs.order_by("dialogue__external_id", "item__order").values_list(
            "dialogue__external_id", "item__code", "value", "updated_at")
        for dialogue_id, code, value, updated in rows.iterator(chunk_size=CHUNK_SIZE):
            yield {"dialogue_id": dialogue_id, "rater": rater, "item": code, "value": value, "rater_kind": JUDGE,
                   "judge_run": run_id, "created": iso_utc(updated)}


def jury_label_rows(corpus, campaign=None, *, names: bool = False) -> Iterator[dict[str, Any]]:
    """Every live jury's combined answers on ``corpus``, after the runs' (:func:`scoring.judges.juries.jury_label_rows`;
    imported here, not at start-up: it needs pandas)."""
    from scoring.judges.juries import jury_label_rows as rows

    yield from rows(corpus, campaign, names=names)


def _runs_mark(corpus, campaign=None) -> list:
    """What the corpus's runs' rows depend on: each run's state and last stored answer."""
    from scoring.judges.models import JudgeRun

    return list(JudgeRun.objects.filter(corpus=corpus).order_by("pk")
                .values_list("pk", "status", "activity_at", "finished_at"))


def _juries_mark(corpus, campaign=None) -> list:
    """What the juries' rows depend on: the live juries (their runs' marks are the runs' source's)."""
    from scoring.judges.models import Jury

    return list(Jury.objects.alive().filter(corpus=corpus).order_by("pk").values_list("pk", "created_at"))


judge_label_rows.mark = _runs_mark  # type: ignore[attr-defined]
jury_label_rows.mark = _juries_mark  # type: ignore[attr-defined]
register_label_source(judge_label_rows)
register_label_source(jury_label_rows)
