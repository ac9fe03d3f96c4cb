"""Dialogue import in the JSON Lines format of DESIGN.md section 5, and question-answer items
(``{"id", "question", "answer", "reference", "model", "language", "split", "meta"}``, reference optional) for
instruments that rate answers. Either may carry ``case`` (the question or patient case it answers) and ``replicate``
(which repetition of the model's answer, 1, 2, ...): repeated answers of one model to one case. A corpus holds one
kind. All-or-nothing: every bad line is reported with its number
and nothing is written unless every line is good."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from annotation.models import Corpus, Dialogue, PrivacyStatus
from core.site import storable
from projects.models import AuditEvent

DEFAULT_MAX_BYTES = 200 * 1024 * 1024

REQUIRED = ("id", "self_report", "turns")
QA_REQUIRED = ("id", "question", "answer")
SPLITS = {"train", "validation", "test", ""}
DIALOGUE, ANSWER = Corpus.Kind.DIALOGUE.value, Corpus.Kind.ANSWER.value


@dataclass
class LineError:
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message


@dataclass
class ParseResult:
    records: list[dict[str, Any]] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)


class ImportRejected(Exception):
    """Raised with every line error when an import is refused."""

    def __init__(self, errors: list[LineError]):
        self.errors = errors
        super().__init__("; ".join(str(e) for e in errors[:20]) + (" ..." if len(errors) > 20 else ""))

    def grouped(self, first: int = 5) -> list[str]:
        return group_errors(self.errors, first)


def group_errors(errors: list[LineError], first: int = 5) -> list[str]:
    """One line per distinct message, in the order of its first line, with how many lines have it and the first
    ``first`` line numbers: "1,380 lines (2, 3, 4, 5, 6, ...): rater_kind ..."; a message of one line reads
    "line 7: ..." and one about the whole file "file: ..."."""
    groups: dict[str, list[int]] = {}
    for error in sorted(errors, key=lambda e: e.line):
        groups.setdefault(error.message, []).append(error.line)
    out = []
    for message, lines in groups.items():
        numbered = sorted({n for n in lines if n > 0})
        if not numbered:
            out.append(f"file: {message}")
        elif len(numbered) == 1:
            out.append(f"line {numbered[0]}: {message}")
        else:
            shown = ", ".join(str(n) for n in numbered[:first]) + (", ..." if len(numbered) > first else "")
            out.append(f"{len(numbered):,} lines ({shown}): {message}")
    return out


def _max_length(name: str) -> int:
    return Dialogue._meta.get_field(name).max_length


def storable_problem(value: Any) -> str | None:
    """Why a parsed JSON value cannot be stored as it is on every database, or None (``core.site.storable``)."""
    return storable.json_problem(value)


def record_kind(obj: dict[str, Any]) -> str:
    """"answer" for a question-answer line, else "dialogue"."""
    return ANSWER if ("question" in obj or "answer" in obj) and "turns" not in obj else DIALOGUE


def _check_record(obj: Any) -> list[str]:
    if not isinstance(obj, dict):
        return ["expected a JSON object"]
    if "question" in obj and "turns" in obj:
        return ['a line is a dialogue ("self_report", "turns") or an answer ("question", "answer"), not both']
    answer = record_kind(obj) == ANSWER
    required = QA_REQUIRED if answer else REQUIRED
    problems = [f'missing field "{name}"' for name in required if name not in obj]
    if problems:
        return problems
    unstorable = storable_problem(obj)
    if unstorable:
        return [unstorable]
    if not isinstance(obj["id"], str | int) or not str(obj["id"]).strip():
        problems.append('"id" must be a non-empty string')
    elif len(str(obj["id"]).strip()) > _max_length("external_id"):
        problems.append(f'"id" is {len(str(obj["id"]).strip())} characters long; '
                        f'at most {_max_length("external_id")} are allowed')
    problems += _check_answer(obj) if answer else _check_dialogue(obj)
    if "split" in obj and (obj["split"] or "") not in SPLITS:
        problems.append(f'"split" must be one of train, validation, test (got {obj["split"]!r})')
    if "meta" in obj and not isinstance(obj["meta"], dict):
        problems.append('"meta" must be an object')
    problems += _check_replicate(obj)
    for name, column in (("model", "source_model"), ("language", "language")):
        if name in obj and obj[name] is not None and not isinstance(obj[name], str):
            problems.append(f'"{name}" must be text')
        elif len((obj.get(name) or "").strip()) > _max_length(column):
            problems.append(f'"{name}" is {len(obj[name].strip())} characters long; '
                            f"at most {_max_length(column)} are allowed")
    return problems


REPLICATE_MAX = 32767


def _check_replicate(obj: dict[str, Any]) -> list[str]:
    """``case`` (the question or patient case the text answers) and ``replicate`` (which repetition, 1, 2, ...)."""
    problems = []
    case = obj.get("case")
    if case is not None and (isinstance(case, bool) or not isinstance(case, str | int)):
        problems.append('"case" must be text (the question or case id) or left out')
    elif case is not None and len(str(case).strip()) > _max_length("case"):
        problems.append(f'"case" is {len(str(case).strip())} characters long; at most {_max_length("case")} are '
                        "allowed")
    replicate = obj.get("replicate")
    if replicate is not None and (isinstance(replicate, bool) or not isinstance(replicate, int)
                                  or not 1 <= replicate <= REPLICATE_MAX):
        problems.append(f'"replicate" must be a whole number from 1 to {REPLICATE_MAX} (which repetition of the '
                        f"answer), got {replicate!r}")
    elif replicate is not None and case in (None, ""):
        problems.append('"replicate" needs a "case": the question or case the repeated answers answer')
    return problems


def _check_answer(obj: dict[str, Any]) -> list[str]:
    problems = []
    if "self_report" in obj:
        problems.append('a question-answer line has no "self_report" (dialogues have self_report and turns)')
    for name in ("question", "answer"):
        if not isinstance(obj[name], str) or not obj[name].strip():
            problems.append(f'"{name}" must be non-empty text')
    if obj.get("reference") is not None and not isinstance(obj["reference"], str):
        problems.append('"reference" must be text (or left out)')
    return problems


def _check_dialogue(obj: dict[str, Any]) -> list[str]:
    problems = []
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
    return problems


def json_objects(lines: Iterable[str | bytes], errors: list[LineError]) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON objects of a JSON Lines file with their line numbers. Lines that are not UTF-8, not JSON, not an
    object or holding text the database cannot store (``core.site.storable``: NUL, unpaired surrogates, NaN) go to
    ``errors``; blank lines are skipped. Every JSONL import reads its file through this."""
    for number, raw in enumerate(lines, start=1):
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError:
                errors.append(LineError(number, "not valid UTF-8"))
                continue
        if number == 1:
            raw = raw.lstrip("\ufeff")  # a UTF-8 byte order mark some editors write
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            errors.append(LineError(number, f"invalid JSON ({exc.msg} at column {exc.colno})"))
            continue
        except RecursionError:
            errors.append(LineError(number, "the JSON is nested too deeply"))
            continue
        except ValueError as exc:  # e.g. a number of more than 4,300 digits
            errors.append(LineError(number, f"invalid JSON ({str(exc).split(':')[0]})"))
            continue
        if not isinstance(obj, dict):
            errors.append(LineError(number, "expected a JSON object"))
            continue
        unstorable = storable.json_problem(obj) if storable.might_be_unstorable(raw) else None
        if unstorable:
            errors.append(LineError(number, unstorable))
            continue
        yield number, obj


def parse_dialogues(lines: Iterable[str | bytes]) -> ParseResult:
    """Parse and validate JSON Lines; blank lines are ignored; duplicate ids within the file are errors, and so
    are lines of the other kind than the first line (dialogues and answers go to separate corpora)."""
    result = ParseResult()
    seen: dict[str, int] = {}
    first_kind: tuple[str, int] | None = None
    for number, obj in json_objects(lines, result.errors):
        problems = _check_record(obj)
        kind = record_kind(obj)
        if first_kind is None:
            first_kind = (kind, number)
        elif kind != first_kind[0]:
            problems.append(f"this line is {'an answer' if kind == ANSWER else 'a dialogue'} but line "
                            f"{first_kind[1]} is {'an answer' if first_kind[0] == ANSWER else 'a dialogue'}; "
                            "a corpus holds dialogues or answers, not both")
        if problems:
            result.errors.extend(LineError(number, p) for p in problems)
            continue
        ext_id = str(obj["id"]).strip()
        if ext_id in seen:
            result.errors.append(LineError(number, f'id "{ext_id}" already appears on line {seen[ext_id]}'))
            continue
        seen[ext_id] = number
        obj["_line"] = number
        obj["_kind"] = kind
        result.records.append(obj)
    if not result.records and not result.errors:
        result.errors.append(LineError(0, "the file contains no dialogues"))
    return result


def max_import_bytes() -> int:
    """The largest dialogue file accepted (``settings.DIALOGUE_IMPORT_MAX_BYTES``, default 200 MB)."""
    return int(getattr(settings, "DIALOGUE_IMPORT_MAX_BYTES", DEFAULT_MAX_BYTES))


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def size_error(size: int, limit: int | None = None) -> LineError | None:
    """A file-level error (line 0) when ``size`` bytes is over the limit; check before reading the file."""
    limit = max_import_bytes() if limit is None else limit
    if size > limit:
        return LineError(0, f"the file is too large ({_megabytes(size)}; the limit is {_megabytes(limit)}, "
                            "settings.DIALOGUE_IMPORT_MAX_BYTES)")
    return None


def answer_turns(question: str, answer: str, reference: str | None = None) -> list[dict[str, str]]:
    """A question-answer item's parts as stored (turns with the roles question, answer and reference)."""
    parts = [("question", question), ("answer", answer), ("reference", reference or "")]
    return [{"role": role, "text": text.strip()} for role, text in parts if text and text.strip()]


def dialogue_fields(obj: dict[str, Any]) -> dict[str, Any]:
    if record_kind(obj) == ANSWER:
        content = {"self_report": "", "turns": answer_turns(obj["question"], obj["answer"], obj.get("reference"))}
    else:
        content = {"self_report": obj["self_report"].strip(),
                   "turns": [{"role": t["role"], "text": t["text"].strip()} for t in obj["turns"]]}
    return {
        **content,
        "source_model": (obj.get("model") or "").strip(),
        "language": (obj.get("language") or "en").strip(),
        "split": (obj.get("split") or "").strip(),
        "meta": obj.get("meta") or {},
        "case": str(obj.get("case") if obj.get("case") is not None else "").strip(),
        "replicate": obj.get("replicate"),
    }


def privacy_fields(self_report: str, turns: list[dict]) -> dict[str, Any]:
    """Run the coarse privacy filter: flagged with its matches, or clear."""
    # imported here: the filter compiles its patterns at import (0.1-0.2 s), which a process that imports nothing
    # (a worker, a command reading stored figures) need not pay at start-up
    from annotation.privacy import scan_dialogue

    matches = scan_dialogue(self_report, turns)
    if matches:
        return {"privacy_status": PrivacyStatus.FLAGGED.value, "privacy_matches": [m.to_dict() for m in matches]}
    return {"privacy_status": PrivacyStatus.CLEAR.value, "privacy_matches": []}


UPDATE_FIELDS = ("self_report", "turns", "source_model", "language", "split", "meta", "case", "replicate",
                 "privacy_status", "privacy_matches")
# Below this many ids the existing ones are looked up with IN (...); above, the corpus's ids are read in one
# query (no bound-parameter limit on SQLite, one index scan on PostgreSQL).
_IN_LOOKUP_MAX = 500


def _update_rows(rows: list[Dialogue]) -> None:
    """Write ``UPDATE_FIELDS`` of existing dialogues in bulk.

    On PostgreSQL one ``UPDATE ... FROM (VALUES ...)`` per batch: Django's bulk_update builds a CASE WHEN per
    field and row (about 20 s for 10,000 dialogues here); this takes a few seconds. Elsewhere bulk_update.
    """
    if connection.vendor != "postgresql":
        Dialogue.objects.bulk_update(rows, UPDATE_FIELDS, batch_size=500)
        return
    qn = connection.ops.quote_name
    fields = [Dialogue._meta.get_field(name) for name in UPDATE_FIELDS]
    pk = Dialogue._meta.pk
    row_sql = "(" + ", ".join(f"%s::{f.db_type(connection)}" for f in [pk, *fields]) + ")"
    assignments = ", ".join(f"{qn(f.column)} = v.{qn(f.column)}" for f in fields)
    columns = ", ".join(qn(f.column) for f in [pk, *fields])
    with connection.cursor() as cursor:
        for start in range(0, len(rows), 1000):
            batch = rows[start:start + 1000]
            params = [f.get_db_prep_save(getattr(row, f.attname), connection) for row in batch
                      for f in [pk, *fields]]
            cursor.execute(
                f"UPDATE {qn(Dialogue._meta.db_table)} AS d SET {assignments} "
                f"FROM (VALUES {', '.join([row_sql] * len(batch))}) AS v({columns}) "
                f"WHERE d.{qn(pk.column)} = v.{qn(pk.column)}",
                params,
            )


def _existing(corpus: Corpus, ext_ids: list[str]) -> dict[str, tuple[int, bool]]:
    """external id -> (pk, soft-deleted?) of the corpus's dialogues among ``ext_ids``, in one query."""
    qs = Dialogue.objects.filter(corpus=corpus)
    if len(ext_ids) <= _IN_LOOKUP_MAX:
        qs = qs.filter(external_id__in=ext_ids)
    wanted = set(ext_ids)
    return {ext: (pk, deleted is not None)
            for ext, pk, deleted in qs.values_list("external_id", "pk", "deleted_at") if ext in wanted}


@transaction.atomic
def import_dialogues(corpus: Corpus, lines: Iterable[str | bytes], *, update: bool = False, user=None,
                     source: str = "") -> dict[str, int]:
    """Write every dialogue of a valid file into ``corpus`` or raise ImportRejected and write nothing.

    New ids are created; with ``update`` ids already in the corpus are replaced (and re-scanned for privacy),
    without it they are errors. Returns the counts ``created``, ``updated`` and ``flagged`` (dialogues the
    privacy filter flagged for review). One query finds existing ids; rows are written in bulk.
    """
    parsed = parse_dialogues(lines)
    errors = list(parsed.errors)
    ids = [str(r["id"]).strip() for r in parsed.records]
    existing = _existing(corpus, ids)
    kind = parsed.records[0]["_kind"] if parsed.records else None
    holds_any = Dialogue.objects.filter(corpus=corpus).exists()
    if kind is not None and holds_any and kind != corpus.kind:
        errors.insert(0, LineError(0, f'corpus "{corpus.name}" holds {corpus.get_kind_display().lower()}; '
                                      f'import {"answers" if kind == ANSWER else "dialogues"} into another corpus'))
    for record, ext_id in zip(parsed.records, ids, strict=True):
        if ext_id not in existing:
            continue
        if not update:
            errors.append(LineError(record["_line"], f'id "{ext_id}" is already in corpus "{corpus.name}" '
                                                     "(use --update to replace it)"))
        elif existing[ext_id][1]:
            errors.append(LineError(record["_line"], f'id "{ext_id}" was deleted from corpus "{corpus.name}"; '
                                                     "deleted dialogues are kept as history and cannot be replaced"))
    if errors:
        raise ImportRejected(sorted(errors, key=lambda e: e.line))
    new_rows: list[Dialogue] = []
    changed: list[Dialogue] = []
    flagged = 0
    for record, ext_id in zip(parsed.records, ids, strict=True):
        fields = dialogue_fields(record)
        fields.update(privacy_fields(fields["self_report"], fields["turns"]))
        flagged += fields["privacy_status"] == PrivacyStatus.FLAGGED
        if ext_id in existing:
            changed.append(Dialogue(pk=existing[ext_id][0], corpus=corpus, external_id=ext_id, **fields))
        else:
            new_rows.append(Dialogue(corpus=corpus, external_id=ext_id, **fields))
    if kind is not None and corpus.kind != kind:  # an empty corpus takes the kind of its first import
        corpus.kind = kind
        corpus.save(update_fields=["kind"])
    Dialogue.objects.bulk_create(new_rows, batch_size=1000)
    if changed:
        _update_rows(changed)
    counts = {"created": len(new_rows), "updated": len(changed), "flagged": flagged}
    AuditEvent.record(user, "corpus.import_dialogues", corpus, file=source, update=update, **counts)
    return counts


def import_dialogue_file(corpus: Corpus, path: str | os.PathLike, *, update: bool = False, user=None,
                         max_bytes: int | None = None) -> dict[str, int]:
    """Import a JSON Lines file from disk; its size is checked against the limit before it is read."""
    too_large = size_error(os.path.getsize(path), max_bytes)
    if too_large:
        raise ImportRejected([too_large])
    with open(path, "rb") as handle:
        return import_dialogues(corpus, handle, update=update, user=user, source=os.path.basename(path))
