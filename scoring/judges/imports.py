"""Imported judge runs: an existing judge's scores from a label file (``import_labels`` rows with ``rater_kind``
judge) become a finished judge run with its provenance, usable wherever a run is (judge vs physicians, the run
comparison, the label exports, the API, ``judge_report``).

One run per judge: the rows' ``rater`` (the judge's name) and ``judge_run`` (an optional label telling several runs
of one judge apart). The run records the file's name and SHA-256, the ``judge_model`` of its rows, the import date
and who imported it; the rows' ``raw_response`` is kept as each answer's text and their ``prompt`` beside it. A row
without a value is scored from its raw response with the instrument's answer keys (``judge_keys``), as a live run
reads a judge's answer; one that gives no score is refused with its line, or -- with ``skip_unscored``
(``import_labels --skip-unscored``) -- imported unscored with its reason, as a run leaves an answer it cannot score,
and the run is then finished with problems. An imported run has no configuration and
no endpoint and is finished when it is created, so the LLM engine never sees it (``runs.start`` and ``retry_failed``
refuse it too). A file is imported once per corpus: importing it again is refused with the run it made.

Importing this module registers the writer with :func:`annotation.label_import.register_judge_importer`.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotation.importers import LineError
from annotation.label_import import LabelRow, register_judge_importer
from annotation.models import Corpus, Item, ScaleVersion
from projects.models import AuditEvent
from scoring.judges.models import ImportedPrompt, JudgeResult, JudgeRun
from scoring.judges.prompts import parse_answer, parse_item


def _groups(rows: list[LabelRow]) -> dict[tuple[str, str], list[LabelRow]]:
    groups: dict[tuple[str, str], list[LabelRow]] = defaultdict(list)
    for row in rows:
        groups[(row.rater, row.judge_run)].append(row)
    return groups


def _judge_name(rater: str, label: str) -> str:
    return f"{rater} [{label}]" if label else rater


def score_from_response(text: str, item: Item, judge_keys: dict[str, str]) -> tuple[Any, str]:
    """(value or None, why not) of ``item`` read from a judge's raw answer: its JSON (fenced or not; the item's
    code or the instrument's judge keys), else a verdict on the first line."""
    parsed, _ = parse_answer(text, [item], judge_keys)
    if parsed is not None:
        if item.code in parsed:
            return parsed[item.code], ""
        return None, f"raw_response gives no score on item {item.code}'s scale (missing, or not one of its values)"
    value, _ = parse_item(text, item)
    if value is None:
        return None, f"raw_response holds no score for item {item.code} (no JSON object, no verdict on its first line)"
    return value, ""


class JudgeImporter:
    """The writer :mod:`annotation.label_import` hands judge rows to."""

    def check(self, corpus: Corpus, version: ScaleVersion, rows: list[LabelRow], dialogues: dict[str, int],
              sha256: str, skip_unscored: bool = False) -> list[LineError]:
        errors: list[LineError] = []
        before = (JudgeRun.objects.filter(corpus=corpus, source=JudgeRun.Source.IMPORTED, source_sha256=sha256)
                  .order_by("pk").first())
        if before is not None:
            errors.append(LineError(0, f"this file's judge scores were imported already: run #{before.pk} "
                                       f"({before.name}, {before.created_at:%Y-%m-%d %H:%M}); a file is imported once"))
        for (rater, label), group in _groups(rows).items():
            models = [r.judge_model for r in group if r.judge_model]
            if len(set(models)) > 1:
                first = next(r for r in group if r.judge_model)
                for row in group:
                    if row.judge_model and row.judge_model != first.judge_model:
                        errors.append(LineError(row.line, f'judge "{_judge_name(rater, label)}" names model '
                                                          f'"{first.judge_model}" on line {first.line}: one run has '
                                                          "one model (give another judge_run label)"))
        items = {item.code: item for item in version.rating_items().prefetch_related("levels")}
        keys = dict(version.judge_keys or {})
        for row in rows:
            if row.value is None and row.item_code in items:
                value, problem = score_from_response(row.raw_response, items[row.item_code], keys)
                if value is None and skip_unscored:
                    row.unscored = problem
                elif value is None:
                    errors.append(LineError(row.line, f"{problem} (--skip-unscored imports the other rows and "
                                                      "leaves this answer unscored, as a run would)"))
                row.value = value
        return errors

    @transaction.atomic
    def write(self, corpus: Corpus, version: ScaleVersion, rows: list[LabelRow], dialogues: dict[str, int], *,
              file_name: str, sha256: str, user=None) -> list[dict[str, Any]]:
        now = timezone.now()
        who = getattr(user, "username", "") if getattr(user, "is_authenticated", False) else ""
        summaries = []
        for (rater, label), group in _groups(rows).items():
            model = next((r.judge_model for r in group if r.judge_model), "")
            name = _judge_name(rater, label)
            unscored = [r for r in group if r.unscored]
            run = JudgeRun.objects.create(
                project_id=corpus.project_id, config=None, source=JudgeRun.Source.IMPORTED, scale_version=version,
                corpus=corpus,
                source_file=file_name[:255], source_sha256=sha256, created_by=user if who else None,
                item_codes=sorted({r.item_code for r in group}),
                status=JudgeRun.Status.PROBLEMS if unscored else JudgeRun.Status.SUCCEEDED,
                error=(f"{len(unscored)} answer(s) of the file give no score on their item's scale and are unscored "
                       "(imported with --skip-unscored)") if unscored else "",
                started_at=now, finished_at=now, activity_at=now, request_limit=0,
                snapshot={"name": name[:200], "model": model, "mode": "imported", "source": "imported",
                          "judge_run": label, "file": file_name, "sha256": sha256, "imported_at": now.isoformat(),
                          "imported_by": who, "scale_version": version.pk, "scale_version_name": str(version),
                          "prompt_set": None, "prompt_set_name": ""})
            results = JudgeResult.objects.bulk_create(
                [JudgeResult(run=run, dialogue_id=dialogues[r.dialogue_id], item_id=r.item_id,
                             status=JudgeResult.Status.UNSCORED if r.unscored else JudgeResult.Status.DONE,
                             value=r.value, rationale=r.raw_response, error=f"line {r.line}: {r.unscored}"
                             if r.unscored else "", updated_at=r.created or now) for r in group], batch_size=1000)
            ImportedPrompt.objects.bulk_create(
                [ImportedPrompt(result=result, text=r.prompt) for result, r in zip(results, group, strict=True)
                 if r.prompt], batch_size=1000)
            AuditEvent.record(user, "judge_run.import", run, reason=f"imported from {file_name}", file=file_name,
                              sha256=sha256, model=model, results=len(group), unscored=len(unscored))
            summaries.append({"id": run.pk, "name": name, "model": model, "results": len(group),
                              "unscored": len(unscored),
                              "dialogues": len({r.dialogue_id for r in group}), "items": run.item_codes})
        return summaries


register_judge_importer(JudgeImporter())
