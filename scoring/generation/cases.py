"""Patient case import for dialogue generation, JSON Lines, one case (or one case template) a line.

Three shapes, all-or-nothing like the dialogue import (every bad line reported with its number; nothing is
written unless every line is good):

* self-report: ``{"id": "c1", "self_report": "...", "language": "en", "diagnosis": "(optional)", "meta": {}}``
* template: ``{"id": "t1", "template": "I am a {age}-year-old {sex} with {complaint} for {duration}.",
  "slots": {"age": [18, 45], "sex": ["man", "woman"], ...}, "sample": 10, "seed": 1}`` expands into every
  combination of the slot values (or ``sample`` of them, drawn with ``seed``); ids ``t1-1``, ``t1-2``, ...
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
from annotation.models import AuditEvent
from scoring.generation.models import CaseSet, PatientCase

MAX_EXPANSION = 5000  # cases one template line may produce
_FORMATTER = string.Formatter()


def template_slots(template: str) -> list[str]:
    """The slot names of a template ("{age}" -> "age"); raises ValueError on unbalanced braces."""
    names = []
    for _, field_name, _, _ in _FORMATTER.parse(template):
        if field_name is not None:
            if not field_name.isidentifier():
                raise ValueError(f"slot {{{field_name}}} is not a plain name")
            names.append(field_name)
    return names


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


def _expand(obj: dict, problems: list[str]) -> list[tuple[str, dict]]:
    """(self-report, slot values) for every case of a template line."""
    template = obj["template"]
    slots = obj.get("slots")
    if not isinstance(template, str) or not template.strip():
        problems.append('"template" must be non-empty text')
        return []
    if not isinstance(slots, dict) or not slots:
        problems.append('"slots" must be an object of slot name -> list of values')
        return []
    try:
        names = template_slots(template)
    except ValueError as exc:
        problems.append(f'"template": {exc}')
        return []
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
    if problems:
        return []
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
    if sample is None:
        combos = list(itertools.product(*(slots[name] for name in order)))
    else:
        rng = random.Random(obj.get("seed", 0))
        picked = sorted(rng.sample(range(total), sample))
        combos = []
        for index in picked:
            combo = []
            for name in reversed(order):
                index, pos = divmod(index, len(slots[name]))
                combo.append(slots[name][pos])
            combos.append(tuple(reversed(combo)))
    cases = []
    for combo in combos:
        values = {name: value for name, value in zip(order, combo, strict=True)}
        cases.append((template.format(**values).strip(), values))
    return cases


def parse_cases(lines: Iterable[str | bytes]) -> tuple[list[dict[str, Any]], list[LineError]]:
    """Validate every line and expand templates; returns (case field dicts, errors)."""
    cases: list[dict[str, Any]] = []
    errors: list[LineError] = []
    seen: dict[str, int] = {}
    for number, obj in json_objects(lines, errors):
        problems: list[str] = []
        raw_id = obj.get("id")
        if raw_id is not None and (not isinstance(raw_id, str | int) or isinstance(raw_id, bool)
                                   or not str(raw_id).strip()):
            problems.append('"id" must be a non-empty string')
        common = _common(obj, problems)
        produced: list[dict[str, Any]] = []
        if "OSCE_Examination" in obj:
            fields = _osce(obj, problems)
            if fields:
                produced.append({"external_id": str(raw_id).strip() if raw_id is not None else f"osce-{number}",
                                 **fields})
        elif "template" in obj:
            if raw_id is None:
                problems.append('missing field "id"')
            diagnosis = _text(obj, "diagnosis", problems)
            for n, (text, values) in enumerate(_expand(obj, problems), start=1):
                produced.append({"external_id": f"{str(raw_id).strip()}-{n}", "kind": PatientCase.Kind.SELF_REPORT,
                                 "self_report": text, "patient_info": values, "diagnosis": diagnosis,
                                 "template": obj["template"]})
        elif "self_report" in obj:
            if raw_id is None:
                problems.append('missing field "id"')
            text = _text(obj, "self_report", problems, required=True)
            diagnosis = _text(obj, "diagnosis", problems)
            info = obj.get("patient_info", {})
            if not isinstance(info, dict):
                problems.append('"patient_info" must be an object')
            if not problems:
                produced.append({"external_id": str(raw_id).strip(), "kind": PatientCase.Kind.SELF_REPORT,
                                 "self_report": text, "patient_info": info, "diagnosis": diagnosis})
        else:
            problems.append('each line needs "self_report", "template" (with "slots") or "OSCE_Examination"')
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
