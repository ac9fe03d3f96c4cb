"""Patient case import for dialogue generation, JSON Lines, one case (or one case template) a line.

Three shapes, all-or-nothing like the dialogue import (every bad line reported with its number; nothing is
written unless every line is good):

* self-report: ``{"id": "c1", "self_report": "...", "language": "en", "diagnosis": "(optional)", "meta": {}}``
* template: ``{"id": "t1", "template": "I am a {age}-year-old {sex} with {complaint} for {duration}.",
  "slots": {"age": [18, 45], "sex": ["man", "woman"], ...}, "sample": 10, "seed": 1}`` expands into every
  combination of the slot values (or ``sample`` of them, drawn with ``seed``); ids ``t1-1``, ``t1-2``, ...
  Slots are plain names in braces (``{{`` and ``}}`` for literal braces): no format spec (``{age:d}``), conversion
  (``{age!r}``), attribute or index. A line gives at most :data:`MAX_EXPANSION` cases of at most
  :data:`MAX_CASE_CHARS` characters, and the templates of one import at most :data:`MAX_IMPORT_CHARS` in all.
* OSCE (Schmidgall et al., AgentClinic, Appendix C): ``{"id": "o1", "OSCE_Examination": {"Objective_for_Doctor": ...,
  "Patient_Actor": {...}, "Physical_Examination_Findings": {...}, "Test_Results": {...},
  "Correct_Diagnosis": "..."}}``; the id is optional (AgentClinic's files have none: ``osce-<line>``).
"""

from __future__ import annotations

import itertools
import os
import random
import string
from collections.abc import Iterable
from typing import Any

from django.db import transaction

from annotation.importers import ImportRejected, LineError, json_objects, size_error
from projects.models import AuditEvent
from scoring.generation.models import CaseSet, PatientCase

MAX_EXPANSION = 5000  # cases one template line may produce
MAX_CASE_CHARS = 20_000  # characters of one self-report expanded from a template
MAX_IMPORT_CHARS = 20_000_000  # characters of every template expansion of one import together
_FORMATTER = string.Formatter()


def _parts(template: str) -> list[tuple[str, str | None]]:
    """(literal text, slot name or None) pieces of a template; raises ValueError for unbalanced braces and for
    anything but a plain slot name (a format spec, a conversion, an attribute or an index)."""
    parts = []
    for literal, field_name, format_spec, conversion in _FORMATTER.parse(template):
        if field_name is not None:
            written = "{" + field_name + (f"!{conversion}" if conversion else "") + (
                f":{format_spec}" if format_spec else "") + "}"
            if conversion or format_spec or not field_name.isidentifier():
                raise ValueError(f"slot {written[:60]} is not a plain slot name: write slots as {{name}}, without "
                                 "format specs (:...), conversions (!...), attributes or indexes")
        parts.append((literal, field_name))
    return parts


def template_slots(template: str) -> list[str]:
    """The slot names of a template ("{age}" -> "age"); raises ValueError on unbalanced braces and on slots that
    are not plain names."""
    return [name for _, name in _parts(template) if name is not None]


def fill(template: str, values: dict[str, Any]) -> str:
    """The template with each slot replaced by its value's text (no format mini-language is ever applied)."""
    return "".join(literal + (str(values[name]) if name is not None else "") for literal, name in _parts(template))


def _text(obj: dict, name: str, problems: list[str], required: bool = False) -> str:
    value = obj.get(name)
    if value is None or value == "":
        if required:
            problems.append(f'"{name}" must be non-empty text')
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        problems.append(f'"{name}" must be {"non-empty " if required else ""}text')
        return ""
    return value.strip()


def _common(obj: dict, problems: list[str]) -> dict[str, Any]:
    meta = obj.get("meta", {})
    if not isinstance(meta, dict):
        problems.append('"meta" must be an object')
        meta = {}
    language = _text(obj, "language", problems) or "en"
    return {"meta": meta, "language": language}


def _osce(obj: dict, problems: list[str]) -> dict[str, Any] | None:
    exam = obj["OSCE_Examination"]
    if not isinstance(exam, dict):
        problems.append('"OSCE_Examination" must be an object')
        return None
    objective = exam.get("Objective_for_Doctor")
    actor = exam.get("Patient_Actor")
    diagnosis = exam.get("Correct_Diagnosis")
    if not isinstance(objective, str) or not objective.strip():
        problems.append('"OSCE_Examination.Objective_for_Doctor" must be non-empty text')
    if not isinstance(actor, dict) or not actor:
        problems.append('"OSCE_Examination.Patient_Actor" must be a non-empty object')
        actor = {}
    if not isinstance(diagnosis, str) or not diagnosis.strip():
        problems.append('"OSCE_Examination.Correct_Diagnosis" must be non-empty text')
    findings = exam.get("Physical_Examination_Findings", {})
    tests = exam.get("Test_Results", {})
    for name, value in (("Physical_Examination_Findings", findings), ("Test_Results", tests)):
        if not isinstance(value, dict):
            problems.append(f'"OSCE_Examination.{name}" must be an object')
    symptoms = actor.get("Symptoms") if isinstance(actor.get("Symptoms"), dict) else {}
    primary = symptoms.get("Primary_Symptom") or ""
    opening = ". ".join(str(p).strip().rstrip(".") for p in (actor.get("Demographics"), primary) if p)
    if not opening:
        opening = str(actor.get("History") or "").strip()
    if actor and not opening:
        problems.append('"Patient_Actor" needs "Demographics", "Symptoms.Primary_Symptom" or "History"')
    if problems:
        return None
    return {"kind": PatientCase.Kind.OSCE, "self_report": opening.rstrip(".") + ".", "patient_info": actor,
            "doctor_info": objective.strip(), "examination": findings, "test_results": tests,
            "diagnosis": diagnosis.strip()}


def _expand(obj: dict, problems: list[str], budget: list[int]) -> list[tuple[str, dict]]:
    """(self-report, slot values) for every case of a template line. ``budget`` holds the characters the import's
    templates may still expand to; sizes are computed before any text is built."""
    if not _check_template(obj, problems):
        return []
    template, slots, sample = obj["template"], obj["slots"], obj.get("sample")
    order = list(slots)
    total = 1
    for name in order:
        total *= len(slots[name])
    if sample is None and total > MAX_EXPANSION:
        problems.append(f"the template gives {total} cases (the limit is {MAX_EXPANSION}); give \"sample\"")
        return []
    if sample is not None and sample > min(total, MAX_EXPANSION):
        problems.append(f'"sample" is {sample} but the template gives {total} combinations')
        return []
    combos = _combinations(slots, order, total, sample, obj.get("seed", 0))
    parts = _parts(template)
    literal_chars = sum(len(literal) for literal, _ in parts)
    uses = {name: sum(1 for _, used in parts if used == name) for name in order}
    cases = []
    for n, combo in enumerate(combos, start=1):
        values = {name: value for name, value in zip(order, combo, strict=True)}
        size = literal_chars + sum(uses[name] * len(str(value)) for name, value in values.items())
        if size > MAX_CASE_CHARS:
            problems.append(f"case {n} of this template would be {size:,} characters long; a case may have at most "
                            f"{MAX_CASE_CHARS:,}")
            return []
        budget[0] -= size
        if budget[0] < 0:
            problems.append(f"the templates up to this line expand to more than {MAX_IMPORT_CHARS:,} characters, "
                            "the limit for one import; split the file or use \"sample\"")
            return []
        cases.append((fill(template, values).strip(), values))
    return cases


def _check_template(obj: dict, problems: list[str]) -> bool:
    """Whether a template line's template, slots and sample are well formed (else ``problems`` says why)."""
    template = obj["template"]
    slots = obj.get("slots")
    if not isinstance(template, str) or not template.strip():
        problems.append('"template" must be non-empty text')
        return False
    if not isinstance(slots, dict) or not slots:
        problems.append('"slots" must be an object of slot name -> list of values')
        return False
    try:
        names = template_slots(template)
    except ValueError as exc:
        problems.append(f'"template": {exc}')
        return False
    missing = sorted(set(names) - set(slots))
    unused = sorted(set(slots) - set(names))
    if missing:
        problems.append(f"slot(s) {', '.join(missing)} used in the template have no values")
    if unused:
        problems.append(f"slot(s) {', '.join(unused)} are not used in the template")
    for name, values in slots.items():
        if not isinstance(values, list) or not values or not all(
                isinstance(v, str | int | float) and str(v).strip() for v in values):
            problems.append(f'slot "{name}" needs a non-empty list of texts or numbers')
    sample = obj.get("sample")
    if sample is not None and (not isinstance(sample, int) or isinstance(sample, bool) or sample < 1):
        problems.append('"sample" must be a positive whole number')
    return not problems


def _combinations(slots: dict, order: list[str], total: int, sample: int | None, seed) -> list[tuple]:
    """Every combination of the slots' values (``total`` of them), or ``sample`` of them drawn with ``seed``, in
    the order of the full list."""
    if sample is None:
        return list(itertools.product(*(slots[name] for name in order)))
    rng = random.Random(seed)
    combos = []
    for index in sorted(rng.sample(range(total), sample)):
        combo = []
        for name in reversed(order):
            index, pos = divmod(index, len(slots[name]))
            combo.append(slots[name][pos])
        combos.append(tuple(reversed(combo)))
    return combos


def parse_cases(lines: Iterable[str | bytes]) -> tuple[list[dict[str, Any]], list[LineError]]:
    """Validate every line and expand templates; returns (case field dicts, errors)."""
    cases: list[dict[str, Any]] = []
    errors: list[LineError] = []
    seen: dict[str, int] = {}
    budget = [MAX_IMPORT_CHARS]  # characters the templates of this import may still expand to
    for number, obj in json_objects(lines, errors):
        problems: list[str] = []
        raw_id = obj.get("id")
        if raw_id is not None and (not isinstance(raw_id, str | int) or isinstance(raw_id, bool)
                                   or not str(raw_id).strip()):
            problems.append('"id" must be a non-empty string')
        common = _common(obj, problems)
        produced = _line_cases(number, obj, raw_id, problems, budget)
        if problems:
            errors.extend(LineError(number, p) for p in problems)
            continue
        for case in produced:
            ext = case["external_id"]
            if len(ext) > 200:
                errors.append(LineError(number, f'id "{ext[:40]}..." is longer than 200 characters'))
                continue
            if ext in seen:
                errors.append(LineError(number, f'id "{ext}" already appears on line {seen[ext]}'))
                continue
            seen[ext] = number
            template = case.pop("template", None)
            meta = dict(common["meta"])
            if template:
                meta["template"] = template
            cases.append({**case, "language": common["language"], "meta": meta, "line": number})
    if not cases and not errors:
        errors.append(LineError(0, "the file contains no cases"))
    return cases, errors


def _line_cases(number: int, obj: dict, raw_id, problems: list[str], budget: list[int]) -> list[dict[str, Any]]:
    """The cases line ``number`` gives (an OSCE case, a template's expansion, or one self-report), without their
    common fields; ``problems`` collects what is wrong with the line (its cases are then not used)."""
    if "OSCE_Examination" not in obj and raw_id is None and ("template" in obj or "self_report" in obj):
        problems.append('missing field "id"')
    if "OSCE_Examination" in obj:
        fields = _osce(obj, problems)
        external_id = str(raw_id).strip() if raw_id is not None else f"osce-{number}"
        return [{"external_id": external_id, **fields}] if fields else []
    if "template" in obj:
        diagnosis = _text(obj, "diagnosis", problems)
        return [{"external_id": f"{str(raw_id).strip()}-{n}", "kind": PatientCase.Kind.SELF_REPORT,
                 "self_report": text, "patient_info": values, "diagnosis": diagnosis, "template": obj["template"]}
                for n, (text, values) in enumerate(_expand(obj, problems, budget), start=1)]
    if "self_report" in obj:
        text = _text(obj, "self_report", problems, required=True)
        diagnosis = _text(obj, "diagnosis", problems)
        info = obj.get("patient_info", {})
        if not isinstance(info, dict):
            problems.append('"patient_info" must be an object')
        if problems:
            return []
        return [{"external_id": str(raw_id).strip(), "kind": PatientCase.Kind.SELF_REPORT, "self_report": text,
                 "patient_info": info, "diagnosis": diagnosis}]
    problems.append('each line needs "self_report", "template" (with "slots") or "OSCE_Examination"')
    return []


@transaction.atomic
def import_cases(case_set: CaseSet, lines: Iterable[str | bytes], *, user=None, source: str = "") -> dict[str, int]:
    """Write every case of a valid file into ``case_set`` or raise ImportRejected and write nothing."""
    cases, errors = parse_cases(lines)
    existing = set(PatientCase.objects.filter(case_set=case_set, external_id__in=[c["external_id"] for c in cases])
                   .values_list("external_id", flat=True))
    for case in cases:
        if case["external_id"] in existing:
            errors.append(LineError(case["line"], f'id "{case["external_id"]}" is already in case set '
                                                  f'"{case_set.name}"'))
    if errors:
        raise ImportRejected(sorted(errors, key=lambda e: e.line))
    PatientCase.objects.bulk_create([PatientCase(case_set=case_set, **case) for case in cases], batch_size=1000)
    counts = {"created": len(cases),
              "osce": sum(c["kind"] == PatientCase.Kind.OSCE for c in cases),
              "self_report": sum(c["kind"] == PatientCase.Kind.SELF_REPORT for c in cases),
              "from_templates": sum("template" in c["meta"] for c in cases)}
    AuditEvent.record(user, "case_set.import", case_set, file=source, **counts)
    return counts


def import_case_file(case_set: CaseSet, path: str | os.PathLike, *, user=None) -> dict[str, int]:
    too_large = size_error(os.path.getsize(path))
    if too_large:
        raise ImportRejected([too_large])
    with open(path, "rb") as handle:
        return import_cases(case_set, handle, user=user, source=os.path.basename(path))
