"""Coordinator pages for dialogue generation: import cases, start a job, watch it, act on it, see the report."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Corpus
from projects.scoping import active_project_id
from scoring.generation import services as generation
from scoring.generation.models import CaseSet, GeneratedDialogue, GenerationJob
from scoring.llm.models import LLMEndpoint
from tests.fake_openai import FakeOpenAI
from tests.generation_fake import Clinic
from tests.test_generation import OSCE, SELF, drive

CASES = "\n".join([json.dumps(OSCE), json.dumps(SELF)]).encode()


@pytest.fixture
def clinic_server():
    with FakeOpenAI(responder=Clinic(diagnose_at=2, diagnoses={"doc-b": "Pneumonia"})) as server:
        yield server


def upload(client, content: bytes, name="cases.jsonl", case_set="Page cases"):
    return client.post(reverse("generation-case-import"),
                       {"file": SimpleUploadedFile(name, content), "case_set": case_set})


def test_pages_need_the_coordinator_or_analyst_role(client, physician, analyst):
    client.force_login(physician)
    assert client.get(reverse("generation-home")).status_code == 403
    client.force_login(analyst)
    assert client.get(reverse("generation-home")).status_code == 200
    assert client.get(reverse("generation-job-new")).status_code == 403


def test_nav_link_and_endpoint_help(client, coordinator, settings):
    settings.OPENAI_BASE_URL = ""
    client.force_login(coordinator)
    html = client.get(reverse("generation-home")).content.decode()
    assert f'href="{reverse("generation-home")}">Generate</a>' in html
    assert 'data-testid="endpoint-help"' in html and "OPENAI_BASE_URL" in html
    form = client.get(reverse("generation-job-new")).content.decode()
    assert 'data-testid="endpoint-help"' in form and "DIAGNOSIS READY:" in form and "self diagnosis" in form


def test_import_errors_are_listed_and_nothing_is_kept(client, coordinator):
    client.force_login(coordinator)
    html = upload(client, b'{"id": "a", "self_report": "Cough."}\n{"id": "b"}\n').content.decode()
    assert "Nothing was imported" in html and "line 2" in html
    assert not CaseSet.objects.exists()


def test_coordinator_imports_generates_for_two_models_and_two_temperatures(client, coordinator, clinic_server,
                                                                            monkeypatch, instrument):
    monkeypatch.setenv("LLM_KEY_PAGE", "sk-test")
    client.force_login(coordinator)
    response = upload(client, CASES)
    case_set = CaseSet.objects.get(name="Page cases")
    assert response.url == reverse("generation-case-set", args=[case_set.pk])
    page = client.get(response.url).content.decode()
    assert "pe1" in page and "s1" in page and "Pulmonary embolism" in page
    doctor_endpoint = LLMEndpoint.objects.create(name="Clinic doctors", base_url=clinic_server.base_url,
                                                 api_key_env="LLM_KEY_PAGE", concurrency=2, timeout_seconds=10)
    patient_endpoint = LLMEndpoint.objects.create(name="Clinic patients", base_url=clinic_server.base_url,
                                                  api_key_env="LLM_KEY_PAGE", concurrency=3, timeout_seconds=20,
                                                  requests_per_minute=600)
    for endpoint in (doctor_endpoint, patient_endpoint):
        endpoint.projects.add(active_project_id())  # an administrator granted them to the project
    form = client.get(reverse("generation-job-new")).content.decode()
    assert "Clinic doctors" in form and 'name="doctor_base_url"' not in form and "api_key_env" not in form
    data = {"case_set": case_set.pk, "corpus_name": "Generated on the page", "doctor_models": "doc-a, doc-b",
            "doctor_endpoint": doctor_endpoint.pk, "patient_model": "patient-sim",
            "patient_endpoint": patient_endpoint.pk, "temperatures": "0.2, 0.8", "doctor_biases": ["none"],
            "patient_biases": ["none"], "repeats": 1, "max_turns": 5, "end_marker": "DIAGNOSIS READY:",
            "patient_temperature": 0.2, "max_tokens": 200, "max_attempts": 3, "doctor_price_in": "0.01",
            "doctor_price_out": "0.02", "patient_price_in": "0", "patient_price_out": "0"}
    from scoring.generation import prompts as gp

    data.update(gp.defaults())
    bad_prompt = client.post(reverse("generation-job-new"), {**data, "patient_prompt": "Act ill."}).content.decode()
    assert "{information}" in bad_prompt and not GenerationJob.objects.exists()
    # a typed URL or key variable is ignored: only the administrator's endpoints count
    response = client.post(reverse("generation-job-new"), {**data, "doctor_api_key_env": "SECRET_KEY",
                                                            "doctor_base_url": "http://127.0.0.1:9/v1"})
    job = GenerationJob.objects.get()
    assert response.url == reverse("generation-job", args=[job.pk]) and job.status == "running"
    assert GeneratedDialogue.objects.filter(job=job).count() == 8
    assert (job.snapshot["doctor_base_url"], job.snapshot["doctor_api_key_env"]) == (clinic_server.base_url,
                                                                                     "LLM_KEY_PAGE")
    # one job, one set of limits: the stricter endpoint's (the longer timeout)
    assert (job.snapshot["concurrency"], job.snapshot["requests_per_minute"], job.snapshot["timeout_seconds"]) == (
        2, 600, 20.0)
    page = client.get(response.url).content.decode()
    assert 'hx-trigger="every 2s"' in page and "sk-test" not in page
    drive(job)
    partial = client.get(reverse("generation-job-progress", args=[job.pk])).content.decode()
    assert 'data-status="succeeded"' in partial and "every 2s" not in partial and "8 of 8" in partial
    page = client.get(reverse("generation-job", args=[job.pk])).content.decode()
    corpus = Corpus.objects.get(name="Generated on the page")
    assert f"{reverse('campaign-new')}?corpus={corpus.pk}" in page
    assert f"{reverse('judge-run-new')}?corpus={corpus.pk}" in page
    assert 'data-testid="accuracy-by-condition"' in page and "100%" in page and "0%" in page
    # the links pre-select the corpus in the campaign and judge run forms
    campaign_form = client.get(f"{reverse('campaign-new')}?corpus={corpus.pk}").content.decode()
    assert f'<option value="{corpus.pk}" selected>' in campaign_form
    judge_form = client.get(f"{reverse('judge-run-new')}?corpus={corpus.pk}").content.decode()
    assert f'<option value="{corpus.pk}" selected>' in judge_form
    gd = GeneratedDialogue.objects.filter(job=job, case__external_id="pe1").first()
    transcript = client.get(reverse("generation-dialogue", args=[gd.pk])).content.decode()
    assert "DIAGNOSIS READY" in transcript and "turn-patient" in transcript


def test_job_actions(client, coordinator, clinic_server, monkeypatch):
    monkeypatch.setenv("LLM_KEY_PAGE", "sk-test")
    client.force_login(coordinator)
    upload(client, CASES)
    job = generation.create_job(case_set=CaseSet.objects.get(), corpus_name="acts", doctor_models=["doc-a"],
                                patient_model="p", temperatures=[0.5], doctor_base_url=clinic_server.base_url,
                                patient_base_url=clinic_server.base_url, doctor_api_key_env="LLM_KEY_PAGE",
                                patient_api_key_env="LLM_KEY_PAGE", max_attempts=1)
    generation.start(job)
    act = reverse("generation-job-action", args=[job.pk])
    client.post(act, {"action": "pause"})
    job.refresh_from_db()
    assert job.status == "paused"
    assert "Resume" in client.get(reverse("generation-job", args=[job.pk])).content.decode()
    client.post(act, {"action": "resume"})
    job.refresh_from_db()
    assert job.status == "running"
    clinic_server.inject({"status": 503}, {"status": 503})
    drive(job)
    page = client.get(reverse("generation-job", args=[job.pk])).content.decode()
    assert 'data-testid="failures"' in page and "HTTP 503" in page and "Retry failed (2)" in page
    client.post(act, {"action": "retry"})
    drive(job)
    assert GeneratedDialogue.objects.filter(job=job, status="done").count() == 2
    client.post(act, {"action": "cancel"})
    messages = [str(m) for m in client.get(reverse("generation-job", args=[job.pk])).context["messages"]]
    assert any("cannot be cancelled" in m for m in messages)
    assert client.get(act).status_code == 405


def test_an_endpoint_that_cannot_send_is_named_with_its_reason_and_refused(client, coordinator, monkeypatch):
    client.force_login(coordinator)
    upload(client, CASES)
    gone = LLMEndpoint.objects.create(name="Gone", base_url="http://synthetic.invalid/v1")
    idle = LLMEndpoint.objects.create(name="Idle local", base_url="http://127.0.0.1:9/v1")
    for endpoint in (gone, idle):
        endpoint.projects.add(active_project_id())
    form = client.get(reverse("generation-job-new")).content.decode()
    assert "Gone (cannot be used now: host synthetic.invalid does not resolve" in form
    assert "Idle local (cannot be used now: nothing answers at http://127.0.0.1:9" in form
    from scoring.generation import prompts as gp

    data = {"case_set": CaseSet.objects.get().pk, "corpus_name": "never", "doctor_models": "doc-a",
            "doctor_endpoint": gone.pk, "patient_model": "p", "patient_endpoint": idle.pk, "temperatures": "0.2",
            "doctor_biases": ["none"], "patient_biases": ["none"], "repeats": 1, "max_turns": 5,
            "end_marker": "DIAGNOSIS READY:", "patient_temperature": 0.2, "max_tokens": 200, "max_attempts": 3,
            "doctor_price_in": "0", "doctor_price_out": "0", "patient_price_in": "0", "patient_price_out": "0",
            **gp.defaults()}
    html = client.post(reverse("generation-job-new"), data).content.decode()
    assert "Gone cannot be used now: host synthetic.invalid does not resolve" in html
    assert "Idle local cannot be used now" in html and not GenerationJob.objects.exists()
