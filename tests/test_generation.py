"""Dialogue generation engine against the fake OpenAI-compatible server: turn limit and end marker, the hidden
diagnosis, the measurement agent, the moderator and accuracy report, caching, cost, provider failures."""

import json
from decimal import Decimal

import pytest

from annotation.models import Dialogue
from core.stats import wilson_ci
from scoring.generation import cases
from scoring.generation import prompts as gp
from scoring.generation import services as generation
from scoring.generation.models import CaseSet, GeneratedDialogue, GenerationJob, GenerationTurn
from scoring.llm import gateway
from scoring.llm.models import LLMCall
from tests.fake_openai import FakeOpenAI
from tests.generation_fake import Clinic

OSCE = {"id": "pe1", "OSCE_Examination": {
    "Objective_for_Doctor": "Evaluate and diagnose the patient presenting with chest pain and shortness of breath.",
    "Patient_Actor": {"Demographics": "45-year-old male",
                      "History": "Sudden chest pain and shortness of breath while walking his dog.",
                      "Symptoms": {"Primary_Symptom": "Chest pain and shortness of breath",
                                   "Secondary_Symptoms": ["Pain improves upon sitting", "No cough"]},
                      "Past_Medical_History": "Hypertension, hyperlipidemia.",
                      "Social_History": "Smokes half a pack a day.", "Review_of_Systems": "No leg swelling."},
    "Physical_Examination_Findings": {"Vital_Signs": {"Heart_Rate": "102 bpm", "Blood_Pressure": "145/90 mmHg"}},
    "Test_Results": {"Chest_X-Ray": {"Findings": "No infiltrates"},
                     "CT_Pulmonary_Angiogram": {"Findings": "Acute segmental pulmonary embolism"}},
    "Correct_Diagnosis": "Pulmonary embolism"}}
SELF = {"id": "s1", "self_report": "I hit my ring finger playing basketball three days ago; it is swollen.",
        "language": "en"}


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("LLM_KEY_GEN_TEST", "sk-test")
    return "LLM_KEY_GEN_TEST"


def case_set(*records, name="cases") -> CaseSet:
    cs = CaseSet.objects.create(name=name)
    cases.import_cases(cs, [json.dumps(r) for r in records])
    return cs


def make_job(server, key, cs, **kw) -> GenerationJob:
    args = dict(case_set=cs, corpus_name=kw.pop("corpus_name", "generated"), doctor_models=["doc-a"],
                patient_model="patient-sim", temperatures=[0.2], doctor_base_url=server.base_url,
                doctor_api_key_env=key, patient_base_url=server.base_url, patient_api_key_env=key, max_turns=6)
    args.update(kw)
    job = generation.create_job(**args)
    generation.start(job)
    return job


def drive(job, limit: int = 400) -> None:
    """Run every step in this process until no dialogue is open (what the Celery tasks do)."""
    for _ in range(limit):
        open_ids = list(GeneratedDialogue.objects.filter(job=job, status__in=GeneratedDialogue.OPEN)
                        .values_list("pk", flat=True))
        job.refresh_from_db()
        if not open_ids or job.status != GenerationJob.Status.RUNNING:
            return
        for pk in open_ids:
            generation.process_step(pk)
    raise AssertionError("generation did not finish")


def test_end_marker_stops_the_dialogue_and_the_moderator_judges(db, key):
    clinic = Clinic(diagnose_at=3)
    with FakeOpenAI(responder=clinic) as server:
        job = make_job(server, key, case_set(OSCE))
        drive(job)
    job.refresh_from_db()
    assert job.status == "succeeded"
    gd = GeneratedDialogue.objects.get(job=job)
    roles = list(GenerationTurn.objects.filter(generated=gd).values_list("role", flat=True))
    assert roles == ["doctor", "patient", "doctor", "patient", "doctor"]
    assert gd.ended_by == "marker" and gd.turns_used == 3
    assert gd.final_diagnosis.startswith("Pulmonary embolism") and gd.correct is True
    assert len(clinic.seen["moderator"]) == 1
    dialogue = Dialogue.objects.get(pk=gd.dialogue_id)
    assert dialogue.corpus == job.corpus and dialogue.source_model == "doc-a"
    assert dialogue.turns[-1]["text"].startswith("DIAGNOSIS READY")
    assert dialogue.self_report == "45-year-old male. Chest pain and shortness of breath."
    assert dialogue.meta["temperature"] == 0.2 and dialogue.meta["case_id"] == "pe1"
    assert dialogue.meta["generation_job"] == job.pk and dialogue.meta["doctor_bias"] == "none"
    # OSCE: the doctor gets the objective and no diagnosis; it opens the consultation.
    first = clinic.seen["doctor"][0]
    assert "chest pain and shortness of breath" in first["messages"][0]["content"]
    assert "Pulmonary embolism".lower() not in first["messages"][0]["content"].lower()


def test_turn_limit_is_respected_and_the_last_turn_asks_for_a_diagnosis(db, key):
    clinic = Clinic(diagnose_at=None)
    with FakeOpenAI(responder=clinic) as server:
        job = make_job(server, key, case_set(OSCE, SELF), max_turns=4)
        drive(job)
    for gd in GeneratedDialogue.objects.filter(job=job):
        roles = list(GenerationTurn.objects.filter(generated=gd).values_list("role", flat=True))
        assert roles.count("doctor") == 4 and roles[-1] == "doctor"
        assert gd.ended_by == "turn_limit" and gd.status == "done"
    osce = GeneratedDialogue.objects.get(job=job, case__external_id="pe1")
    assert osce.correct is False  # no diagnosis within the limit
    assert GeneratedDialogue.objects.get(job=job, case__external_id="s1").correct is None
    finals = [b for b in clinic.seen["doctor"] if "This is your final turn" in b["messages"][-1]["content"]]
    assert len(finals) == 2 and all(sum(m["role"] == "assistant" for m in b["messages"]) == 3 for b in finals)
    assert not clinic.seen["moderator"]  # nothing to judge without a diagnosis
    # Self-report cases: the self-report is the doctor's first message (seeds/000).
    doctor_self = [b for b in clinic.seen["doctor"] if "basketball" in b["messages"][1]["content"]]
    assert doctor_self and doctor_self[0]["messages"][1]["role"] == "user"


def test_diagnosis_never_reaches_the_patient_unless_revealed(db, key):
    clinic = Clinic(diagnose_at=5, test_at=(2,), secrets=("pulmonary embolism",))
    with FakeOpenAI(responder=clinic) as server:
        job = make_job(server, key, case_set(OSCE))
        drive(job)
        patient_turns = GenerationTurn.objects.filter(generated__job=job, role="patient")
        assert patient_turns.count() == 3
        assert all("embolism" not in t.text.lower() for t in patient_turns)
        for body in clinic.seen["patient"]:
            assert all("embolism" not in str(m["content"]).lower() for m in body["messages"])
        # the test result (which names the diagnosis) went to the doctor only
        measurement = GenerationTurn.objects.get(generated__job=job, role="measurement")
        assert "Chest X-Ray" in measurement.text
        assert any(gp.TEST_HIDDEN_FROM_PATIENT in str(m["content"]) for b in clinic.seen["patient"]
                   for m in b["messages"])

        clinic.seen["patient"].clear()
        revealed = make_job(server, key, case_set(OSCE, name="again"), corpus_name="revealed", reveal_diagnosis=True)
        drive(revealed)
    assert any("Pulmonary embolism" in b["messages"][0]["content"] for b in clinic.seen["patient"])
    assert GenerationTurn.objects.filter(generated__job=revealed, role="patient",
                                         text__icontains="pulmonary embolism").exists()


def test_a_patient_turn_naming_the_hidden_diagnosis_is_masked():
    case = generation.PatientCase(kind="osce", diagnosis="Pulmonary embolism (PE)")
    text, masked = generation.mask_diagnosis("Could it be a pulmonary embolism?", case, [])
    assert masked and "embolism" not in text and gp.MASK in text
    said = [{"role": "doctor", "text": "I suspect a pulmonary embolism."}]
    assert generation.mask_diagnosis("A pulmonary embolism? Is it bad?", case, said) == (
        "A pulmonary embolism? Is it bad?", False)


def test_measurement_agent_answers_from_the_case_results(db, key):
    clinic = Clinic(diagnose_at=4, test_at=(1, 2))
    with FakeOpenAI(responder=clinic) as server:
        job = make_job(server, key, case_set(OSCE))
        drive(job)
    roles = list(GenerationTurn.objects.filter(generated__job=job).values_list("role", "text"))
    assert [r for r, _ in roles] == ["doctor", "measurement", "doctor", "measurement", "doctor", "patient", "doctor"]
    assert roles[1][1].startswith("RESULTS:") and "No infiltrates" in roles[1][1]
    system = clinic.seen["measurement"][0]["messages"][0]["content"]
    assert "Acute segmental pulmonary embolism" in system and "Correct" not in system
    # the doctor sees the results as the next user message
    doctor_after = clinic.seen["doctor"][1]["messages"]
    assert doctor_after[-1]["role"] == "user" and doctor_after[-1]["content"].startswith("RESULTS:")


def test_two_models_two_temperatures_report_accuracy_cost_and_cache(db, key):
    clinic = Clinic(diagnose_at=2, diagnoses={"doc-a": "Pulmonary embolism", "doc-b": "Myocardial infarction"})
    osce2 = {**OSCE, "id": "pe2"}
    with FakeOpenAI(responder=clinic) as server:
        job = make_job(server, key, case_set(OSCE, osce2, SELF), doctor_models=["doc-a", "doc-b"],
                       temperatures=[0.2, 0.8], doctor_price_in="0.01", doctor_price_out="0.03",
                       patient_price_in="0.001", patient_price_out="0.002")
        drive(job)
        sent = len(server.chat_requests)
        usage = [(r["json"]["model"], r["usage"]) for r in server.chat_requests]
        job.refresh_from_db()
        assert job.status == "succeeded"
        assert GeneratedDialogue.objects.filter(job=job).count() == 12
        assert job.corpus.dialogues.count() == 12
        assert set(job.corpus.dialogues.values_list("source_model", flat=True)) == {"doc-a", "doc-b"}
        # cost: every paid request at its side's price
        expected = Decimal(0)
        for model, u in usage:
            price = (Decimal("0.01"), Decimal("0.03")) if model.startswith("doc") else (Decimal("0.001"),
                                                                                        Decimal("0.002"))
            expected += (u["prompt_tokens"] * price[0] + u["completion_tokens"] * price[1]) / 1000
        figures = generation.progress(job)
        assert figures["calls"] == sent
        assert figures["prompt_tokens"] == sum(u["prompt_tokens"] for _, u in usage)
        assert Decimal(str(figures["cost"])).quantize(Decimal("0.000001")) == expected.quantize(Decimal("0.000001"))
        assert figures["cost"] > 0 and figures["done"] == 12 and figures["remaining"] == 0
        report = generation.report(job)
        by_model = {r["doctor_model"]: r for r in report["by_model"]}
        assert by_model["doc-a"]["judged"] == 4 and by_model["doc-a"]["correct"] == 4
        assert by_model["doc-b"]["correct"] == 0
        ci = wilson_ci(4, 4)
        assert by_model["doc-a"]["ci_low"] == pytest.approx(ci["ci_low"]) and by_model["doc-a"]["ci_high"] == 1.0
        assert len(report["by_condition"]) == 4 and all(r["turns_mean"] == 2 for r in report["by_condition"])
        # the same job again: every request is answered from the cache, nothing is paid twice
        again = make_job(server, key, CaseSet.objects.get(name="cases"), corpus_name="again",
                         doctor_models=["doc-a", "doc-b"], temperatures=[0.2, 0.8])
        drive(again)
        assert len(server.chat_requests) == sent
        assert generation.progress(again)["calls"] == 0
        assert generation.progress(again)["cached_turns"] == generation.progress(job)["turns"]


def test_repeats_get_their_own_answers(db, key):
    clinic = Clinic(diagnose_at=2)
    with FakeOpenAI(responder=clinic) as server:
        job = make_job(server, key, case_set(SELF), repeats=2)
        drive(job)
        # 2 repeats x (doctor, patient, doctor): identical requests, but each repeat is asked, not cached
        assert len(server.chat_requests) == 6 and len({r["body_hash"] for r in server.chat_requests}) == 3
    assert LLMCall.objects.count() == 6


def test_unauthorised_pauses_at_once_with_the_providers_message(db, key):
    with FakeOpenAI(responder=Clinic()) as server:
        job = make_job(server, key, case_set(SELF))
        server.inject({"status": 401})
        drive(job)
        job.refresh_from_db()
        assert job.status == "paused" and "Incorrect API key" in job.error and key in job.error
        assert len(server.chat_requests) == 1
        assert GeneratedDialogue.objects.get(job=job).status == "pending"  # waits for the key, not failed


def test_rate_limit_is_retried_after_the_providers_delay_without_losing_turns(db, key):
    with FakeOpenAI(responder=Clinic(diagnose_at=3)) as server:
        job = make_job(server, key, case_set(SELF))
        gd = GeneratedDialogue.objects.get(job=job)
        assert generation.process_step(gd.pk).next
        server.inject({"status": 429, "retry_after": 7})
        outcome = generation.process_step(gd.pk)
        assert outcome.state == "retry" and outcome.retry_in >= 7
        assert GenerationTurn.objects.filter(generated=gd).count() == 1
        drive(job)
    gd.refresh_from_db()
    assert gd.status == "done" and gd.turns_used == 3


def test_failed_dialogues_can_be_retried_and_resume_where_they_stopped(db, key):
    with FakeOpenAI(responder=Clinic(diagnose_at=3)) as server:
        job = make_job(server, key, case_set(SELF), max_attempts=2)
        gd = GeneratedDialogue.objects.get(job=job)
        generation.process_step(gd.pk)
        server.inject({"status": 500}, {"status": 500})
        generation.process_step(gd.pk)
        assert generation.process_step(gd.pk).state == "failed"
        job.refresh_from_db()
        # its only dialogue failed: nothing came of the job
        assert job.status == "failed" and generation.progress(job)["failed"] == 1
        assert "gave up after 2 attempts" in job.error
        assert generation.retry_failed(job) == 1
        drive(job)
    gd.refresh_from_db()
    assert gd.status == "done"
    assert list(GenerationTurn.objects.filter(generated=gd).values_list("role", flat=True)) == [
        "doctor", "patient", "doctor", "patient", "doctor"]


def test_pause_and_cancel_stop_the_steps(db, key):
    with FakeOpenAI(responder=Clinic(diagnose_at=3)) as server:
        job = make_job(server, key, case_set(SELF))
        gd = GeneratedDialogue.objects.get(job=job)
        generation.set_status(job, GenerationJob.Status.PAUSED)
        assert generation.process_step(gd.pk).state == "skipped"
        assert not server.chat_requests
        generation.start(job)
        generation.process_step(gd.pk)
        generation.set_status(job, GenerationJob.Status.CANCELLED)
        assert generation.process_step(gd.pk).state == "skipped"
        assert len(server.chat_requests) == 1
        with pytest.raises(generation.GenerationError):
            generation.set_status(job, GenerationJob.Status.PAUSED)


def test_privacy_filter_flags_generated_dialogues(db, key):
    with FakeOpenAI(responder=Clinic(diagnose_at=2, patient_line="My name is Testy McDemoface, call 415-555-0199."
                                     )) as server:
        job = make_job(server, key, case_set(SELF))
        drive(job)
    dialogue = job.corpus.dialogues.get()
    assert dialogue.privacy_status == "flagged" and dialogue.privacy_matches


def test_job_validation(db, key, settings):
    cs = case_set(SELF)
    with pytest.raises(generation.GenerationError, match="Unknown doctor bias"):
        generation.create_job(case_set=cs, corpus_name="x", doctor_models=["m"], patient_model="p",
                              temperatures=[0.2], doctor_base_url="http://127.0.0.1:9/v1",
                              patient_base_url="http://127.0.0.1:9/v1", doctor_biases=["grumpy"])
    with pytest.raises(generation.GenerationError, match="outside 0-2"):
        generation.create_job(case_set=cs, corpus_name="x", doctor_models=["m"], patient_model="p",
                              temperatures=[3], doctor_base_url="http://127.0.0.1:9/v1",
                              patient_base_url="http://127.0.0.1:9/v1")
    with pytest.raises(generation.GenerationError, match="information"):
        generation.create_job(case_set=cs, corpus_name="x", doctor_models=["m"], patient_model="p",
                              temperatures=[0.2], doctor_base_url="http://127.0.0.1:9/v1",
                              patient_base_url="http://127.0.0.1:9/v1", prompt_texts={"patient_prompt": "Be ill."})
    from django.utils import translation

    with translation.override("zh-hans"):
        refusals = []
        for extra in ({"temperatures": [3]}, {"temperatures": [0.2], "doctor_biases": ["grumpy"]},
                      {"temperatures": [0.2], "prompt_texts": {"patient_prompt": "Be ill."}}):
            with pytest.raises(generation.GenerationError) as refused:
                generation.create_job(case_set=cs, corpus_name="x", doctor_models=["m"], patient_model="p",
                                      doctor_base_url="http://127.0.0.1:9/v1",
                                      patient_base_url="http://127.0.0.1:9/v1", **extra)
            refusals.append(str(refused.value))
    assert refusals[0] == "温度 3 超出 0-2 的范围。"
    assert refusals[1].startswith("未知的医生偏倚 'grumpy'；请从 none、")
    assert refusals[2].startswith("患者提示词：提示词必须保留槽位 ")
    settings.OPENAI_BASE_URL = ""
    with pytest.raises(gateway.NotConfigured, match="OPENAI_BASE_URL"):
        generation.create_job(case_set=cs, corpus_name="x", doctor_models=["m"], patient_model="p",
                              temperatures=[0.2])
    assert not GenerationJob.objects.exists()


def test_bias_conditions_reach_the_prompts(db, key):
    clinic = Clinic(diagnose_at=2)
    with FakeOpenAI(responder=clinic) as server:
        job = make_job(server, key, case_set(OSCE), doctor_biases=["none", "recency"],
                       patient_biases=["self_diagnosis"])
        drive(job)
    assert GeneratedDialogue.objects.filter(job=job).count() == 2
    doctor_systems = {b["messages"][0]["content"] for b in clinic.seen["doctor"]}
    assert any(gp.DOCTOR_BIASES["recency"] in s for s in doctor_systems)
    assert any(gp.DOCTOR_BIASES["recency"] not in s for s in doctor_systems)
    assert all(gp.PATIENT_BIASES["self_diagnosis"] in b["messages"][0]["content"] for b in clinic.seen["patient"])
    rows = generation.report(job)["by_condition"]
    assert {r["doctor_bias"] for r in rows} == {"none", "recency"}


def test_accuracy_table_is_pure_and_uses_wilson_intervals():
    records = [{"m": "a", "correct": c, "turns_used": t} for c, t in
               [(True, 3), (True, 5), (False, 4), (None, 2), (True, 6)]]
    (row,) = generation.accuracy_table(records, ["m"])
    assert row["dialogues"] == 5 and row["judged"] == 4 and row["correct"] == 3
    assert row["accuracy"] == 0.75 and row["turns_mean"] == 4 and row["turns_max"] == 6
    # Wilson 95% for 3/4: 0.3006 - 0.9544 (Newcombe 1998 method 3)
    assert row["ci_low"] == pytest.approx(0.3006, abs=1e-4) and row["ci_high"] == pytest.approx(0.9544, abs=1e-4)
