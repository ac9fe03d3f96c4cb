"""Dialogue import in the JSON Lines format of DESIGN.md section 5. All-or-nothing: every bad line is
reported with its number and nothing is written unless every line is good."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from annotation.models import Corpus, Dialogue

REQUIRED = ("id", "self_report", "turns")
SPLITS = {"train", "validation", "test", ""}


@dataclass
class LineError:
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass
class ParseResult:
    records: list[dict[str, Any]] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)


class ImportRejected(Exception):
    """Raised with every line error when an import is refused."""

    def __init__(self, errors: list[LineError]):
        self.errors = errors
        super().__init__("; ".join(str(e) for e in errors[:20]) + (" ..." if len(errors) > 20 else ""))


def _check_record(obj: Any) -> list[str]:
    if not isinstance(obj, dict):
        return ["expected a JSON object"]
    problems = [f'missing field "{name}"' for name in REQUIRED if name not in obj]
    if problems:
        return problems
    if not isinstance(obj["id"], str | int) or not str(obj["id"]).strip():
        problems.append('"id" must be a non-empty string')
    if not isinstance(obj["self_report"], str) or not obj["self_report"].strip():
        problems.append('"self_report" must be non-empty text')
    turns = obj["turns"]
    if not isinstance(turns, list) or not turns:
        problems.append('"turns" must be a non-empty list')
    else:
        for n, turn in enumerate(turns, start=1):
            if not isinstance(turn, dict):
                problems.append(f"turn {n} is not an object")
                continue
            if turn.get("role") not in Dialogue.ROLES:
                problems.append(f'turn {n} has unknown role {turn.get("role")!r} (use {", ".join(Dialogue.ROLES)})')
            if not isinstance(turn.get("text"), str) or not turn["text"].strip():
                problems.append(f"turn {n} has no text")
    if "split" in obj and (obj["split"] or "") not in SPLITS:
        problems.append(f'"split" must be one of train, validation, test (got {obj["split"]!r})')
    if "meta" in obj and not isinstance(obj["meta"], dict):
        problems.append('"meta" must be an object')
    for name in ("model", "language"):
        if name in obj and obj[name] is not None and not isinstance(obj[name], str):
            problems.append(f'"{name}" must be text')
    return problems


def parse_dialogues(lines: Iterable[str | bytes]) -> ParseResult:
    """Parse and validate JSON Lines; blank lines are ignored; duplicate ids within the file are errors."""
    result = ParseResult()
    seen: dict[str, int] = {}
    for number, raw in enumerate(lines, start=1):
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError:
                result.errors.append(LineError(number, "not valid UTF-8"))
                continue
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            result.errors.append(LineError(number, f"invalid JSON ({exc.msg} at column {exc.colno})"))
            continue
        problems = _check_record(obj)
        if problems:
            result.errors.extend(LineError(number, p) for p in problems)
            continue
        ext_id = str(obj["id"]).strip()
        if ext_id in seen:
            result.errors.append(LineError(number, f'id "{ext_id}" already appears on line {seen[ext_id]}'))
            continue
        seen[ext_id] = number
        obj["_line"] = number
        result.records.append(obj)
    if not result.records and not result.errors:
        result.errors.append(LineError(0, "the file contains no dialogues"))
    return result


def dialogue_fields(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "self_report": obj["self_report"].strip(),
        "turns": [{"role": t["role"], "text": t["text"].strip()} for t in obj["turns"]],
        "source_model": (obj.get("model") or "").strip(),
        "language": (obj.get("language") or "en").strip(),
        "split": (obj.get("split") or "").strip(),
        "meta": obj.get("meta") or {},
    }


@transaction.atomic
def import_dialogues(corpus: Corpus, lines: Iterable[str | bytes], *, update: bool = False) -> dict[str, int]:
    """Write every dialogue of a valid file into ``corpus`` or raise ImportRejected and write nothing."""
    parsed = parse_dialogues(lines)
    errors = list(parsed.errors)
    existing = dict(
        Dialogue.objects.filter(corpus=corpus, external_id__in=[str(r["id"]).strip() for r in parsed.records])
        .values_list("external_id", "pk")
    )
    if not update:
        errors += [
            LineError(r["_line"], f'id "{str(r["id"]).strip()}" is already in corpus "{corpus.name}" '
                                  "(use --update to replace it)")
            for r in parsed.records if str(r["id"]).strip() in existing
        ]
    if errors:
        raise ImportRejected(sorted(errors, key=lambda e: e.line))
    created = updated = 0
    new_rows = []
    for record in parsed.records:
        ext_id = str(record["id"]).strip()
        fields = dialogue_fields(record)
        if ext_id in existing:
            Dialogue.objects.filter(pk=existing[ext_id]).update(**fields)
            updated += 1
        else:
            new_rows.append(Dialogue(corpus=corpus, external_id=ext_id, **fields))
    Dialogue.objects.bulk_create(new_rows, batch_size=1000)
    created = len(new_rows)
    return {"created": created, "updated": updated}
