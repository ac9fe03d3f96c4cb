"""Patient case import: self-reports, templates expanded from slots, AgentClinic OSCE cases; all-or-nothing with
line numbers; the demo case file."""

import io
import json

import pytest
from django.core.management import call_command

from annotation.importers import ImportRejected
from scoring.generation import cases
from scoring.generation.models import CaseSet, PatientCase
from tests.test_generation import OSCE

AGENTCLINIC_LINE = {"OSCE_Examination": {k: v for k, v in OSCE["OSCE_Examination"].items()}}  # no id, as published


def lines(*records) -> list[str]:
    return [r if isinstance(r, str) else json.dumps(r) for r in records]


def test_three_shapes_are_imported(db):
    cs = CaseSet.objects.create(name="mixed")
    template = {"id": "t", "template": "I am a {age}-year-old {sex} with {complaint}.",
                "slots": {"age": [30, 60], "sex": ["man", "woman"], "complaint": ["a cough", "back pain", "fever"]},
                "diagnosis": "Unknown"}
    counts = cases.import_cases(cs, lines({"id": "s1", "self_report": "I have a rash.", "language": "zh"}, "",
                                          template, OSCE, AGENTCLINIC_LINE))
    assert counts == {"created": 15, "osce": 2, "self_report": 13, "from_templates": 12}
    t = PatientCase.objects.get(case_set=cs, external_id="t-1")
    assert t.self_report == "I am a 30-year-old man with a cough." and t.patient_info == {
        "age": 30, "sex": "man", "complaint": "a cough"}
    assert PatientCase.objects.get(case_set=cs, external_id="t-12").self_report == (
        "I am a 60-year-old woman with fever.")
    osce = PatientCase.objects.get(case_set=cs, external_id="pe1")
    assert osce.kind == "osce" and osce.diagnosis == "Pulmonary embolism" and osce.has_tests
    assert osce.doctor_info.startswith("Evaluate and diagnose") and "Correct_Diagnosis" not in osce.patient_info
    assert PatientCase.objects.get(case_set=cs, external_id="osce-5").line == 5
    assert PatientCase.objects.get(case_set=cs, external_id="s1").language == "zh"


def test_template_sampling_is_reproducible(db):
    record = {"id": "t", "template": "{a} {b}", "slots": {"a": list("abcdefgh"), "b": list("12345678")},
              "sample": 5, "seed": 3}
    first, errors = cases.parse_cases(lines(record))
    second, _ = cases.parse_cases(lines(record))
    assert not errors and len(first) == 5 and [c["self_report"] for c in first] == [c["self_report"] for c in second]
    assert len({c["self_report"] for c in first}) == 5


def test_bad_lines_are_all_reported_and_nothing_is_written(db):
    cs = CaseSet.objects.create(name="bad")
    bad = lines(
        {"id": "ok", "self_report": "Fine."},
        "{not json",
        {"id": "x"},
        {"id": "t", "template": "I am {age} with {pain}", "slots": {"age": [1], "colour": ["red"]}},
        {"id": "o", "OSCE_Examination": {"Objective_for_Doctor": "", "Patient_Actor": {"Demographics": "40 M"}}},
        {"id": "ok", "self_report": "Again."},
        {"id": "big", "template": "{a}{b}", "slots": {"a": list(range(100)), "b": list(range(100))}},
        [1, 2],
    )
    with pytest.raises(ImportRejected) as info:
        cases.import_cases(cs, bad)
    text = [str(e) for e in info.value.errors]
    assert any(t.startswith("line 2: invalid JSON") for t in text)
    assert any(t.startswith("line 3:") and "self_report" in t for t in text)
    assert any(t.startswith("line 4:") and "pain" in t and "have no values" in t for t in text)
    assert any(t.startswith("line 4:") and "colour" in t and "not used" in t for t in text)
    assert any(t.startswith("line 5:") and "Objective_for_Doctor" in t for t in text)
    assert any(t.startswith("line 5:") and "Correct_Diagnosis" in t for t in text)
    assert any(t.startswith("line 6:") and "already appears on line 1" in t for t in text)
    assert any(t.startswith("line 7:") and "10000 cases" in t for t in text)
    assert any(t.startswith("line 8:") and "JSON object" in t for t in text)
    assert not PatientCase.objects.exists()


def test_ids_already_in_the_set_are_refused(db):
    cs = CaseSet.objects.create(name="twice")
    cases.import_cases(cs, lines({"id": "a", "self_report": "Cough."}))
    with pytest.raises(ImportRejected, match='line 2: id "a" is already in case set "twice"'):
        cases.import_cases(cs, lines({"id": "b", "self_report": "Fever."}, {"id": "a", "self_report": "Cough."}))
    assert PatientCase.objects.filter(case_set=cs).count() == 1
    with pytest.raises(ImportRejected, match="no cases"):
        cases.import_cases(cs, ["", "  "])


def test_demo_cases_load_once_without_llm_calls(db, demo_scope):
    call_command("load_generation_demo", stdout=io.StringIO())
    cs = CaseSet.objects.get()
    assert cs.cases.filter(kind="osce").count() == 2 and cs.cases.count() == 8
    call_command("load_generation_demo", stdout=io.StringIO())
    assert PatientCase.objects.count() == 8
