"""No server secret leaves through a judge or a generation job.

Keys come only from OPENAI_API_KEY, LLM_KEY_* or names an administrator lists in LLM_KEY_VARIABLES (forms,
commands, admin and again at call time); endpoints are defined by administrators; provider error text is
shortened and never echoes headers or keys."""

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from annotation.models import Corpus, Dialogue, ScaleVersion
from scoring.generation import services as generation
from scoring.generation.models import CaseSet, PatientCase
from scoring.judges import runs as judging
from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun
from scoring.llm import gateway, keys
from scoring.llm.models import LLMEndpoint
from tests.fake_openai import FakeOpenAI, mini_cex_answer
from tests.test_judge import drain

BASE_DIR = Path(__file__).resolve().parent.parent


@pytest.fixture
def corpus(db):
    corpus = Corpus.objects.create(name="keyed")
    Dialogue.objects.create(corpus=corpus, external_id="k1", self_report="Cough.",
                            turns=[{"role": "doctor", "text": "Hello"}, {"role": "patient", "text": "Hi"}])
    return corpus


@pytest.fixture
def prompt_set(db):
    return judging.default_prompt_set(ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1))


# ------------------------------------------------------------------------------------------------- the policy
@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "LLM_KEY_AZURE", "LLM_KEY_vllm_1".upper()])
def test_allowed_names(name):
    assert keys.is_allowed(name) and keys.check_key_variable(f" {name} ") == name


@pytest.mark.parametrize("name", ["SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL", "AWS_SECRET_ACCESS_KEY",
                                  "LLM_KEY_", "llm_key_x", "sk-live-abc123", "PATH", "HOME"])
def test_other_names_are_refused_with_the_allowed_names(name):
    assert not keys.is_allowed(name)
    with pytest.raises(keys.KeyVariableRefused) as refused:
        keys.check_key_variable(name)
    assert "OPENAI_API_KEY" in str(refused.value) and "LLM_KEY_" in str(refused.value)
    assert "LLM_KEY_VARIABLES" in str(refused.value)


def test_an_administrator_can_allow_more_names(settings):
    assert not keys.is_allowed("AZURE_OPENAI_API_KEY")
    settings.LLM_KEY_VARIABLES = ["AZURE_OPENAI_API_KEY"]
    assert keys.is_allowed("AZURE_OPENAI_API_KEY")
    assert "AZURE_OPENAI_API_KEY" in keys.refusal("SECRET_KEY")


def test_the_gateway_refuses_at_call_time(monkeypatch):
    monkeypatch.setenv("LLM_KEY_OK", "sk-ok")
    assert gateway.resolve_endpoint("http://127.0.0.1:9/v1", "LLM_KEY_OK").api_key == "sk-ok"
    for name in ("SECRET_KEY", "DATABASE_URL"):
        with pytest.raises(gateway.NotConfigured, match="LLM_KEY_"):
            gateway.resolve_endpoint("http://127.0.0.1:9/v1", name)


# -------------------------------------------------------------------------------------------- judges and runs
def test_a_stored_judge_with_a_forbidden_variable_never_sends_it(corpus, prompt_set, monkeypatch):
    """A row written before the rule (or past the forms) is refused when the run starts and when it sends."""
    with FakeOpenAI(responder=mini_cex_answer) as server:
        config = JudgeConfig.objects.create(name="old", base_url=server.base_url, api_key_env="LLM_KEY_T",
                                            model="m", prompt_set=prompt_set)
        JudgeConfig.objects.filter(pk=config.pk).update(api_key_env="SECRET_KEY")
        config.refresh_from_db()
        with pytest.raises(gateway.NotConfigured, match="LLM_KEY_"):
            judging.create_run(config, corpus, item_codes=["1.1"])
        # a run whose snapshot names the variable (made before the rule) fails at its first unit
        monkeypatch.setenv("LLM_KEY_T", "sk-t")
        JudgeConfig.objects.filter(pk=config.pk).update(api_key_env="LLM_KEY_T")
        config.refresh_from_db()
        run = judging.create_run(config, corpus, item_codes=["1.1"])
        JudgeRun.objects.filter(pk=run.pk).update(snapshot={**run.snapshot, "api_key_env": "SECRET_KEY"})
        judging.start(run)
        drain(run)
        assert run.status == JudgeRun.Status.FAILED and "LLM_KEY_" in run.error
        assert server.request_count == 0


def test_model_validation_refuses_forbidden_variables(prompt_set):
    config = JudgeConfig(name="x", api_key_env="SECRET_KEY", model="m", prompt_set=prompt_set)
    with pytest.raises(ValidationError, match="LLM_KEY_"):
        config.full_clean()
    endpoint = LLMEndpoint(name="e", base_url="https://user:pw@api.example.org/v1", api_key_env="DATABASE_URL")
    with pytest.raises(ValidationError) as invalid:
        endpoint.full_clean()
    assert set(invalid.value.message_dict) == {"base_url", "api_key_env"}


def test_run_judge_refuses_a_forbidden_variable_and_sends_nothing(corpus):
    with FakeOpenAI(responder=mini_cex_answer) as server:
        with pytest.raises(CommandError, match="OPENAI_API_KEY or a name starting with LLM_KEY_"):
            call_command("run_judge", corpus="keyed", model="m", base_url=server.base_url,
                         api_key_env="SECRET_KEY", stdout=io.StringIO(), stderr=io.StringIO())
        assert server.request_count == 0 and not JudgeConfig.objects.exists()


def test_run_judge_exits_non_zero_from_the_shell():
    with FakeOpenAI(responder=mini_cex_answer) as server:
        done = subprocess.run(
            [sys.executable, "manage.py", "run_judge", "--corpus", "any", "--model", "m", "--base-url",
             server.base_url, "--api-key-env", "SECRET_KEY"],
            cwd=BASE_DIR, env=os.environ.copy(), capture_output=True, text=True, timeout=120)
        assert done.returncode != 0
        assert "'SECRET_KEY' cannot hold an LLM key" in done.stderr and "LLM_KEY_" in done.stderr
        assert server.request_count == 0


def test_generation_refuses_forbidden_variables(db, tmp_path):
    case_set = CaseSet.objects.create(name="k")
    PatientCase.objects.create(case_set=case_set, external_id="c1", line=1, kind="self_report",
                               self_report="Cough.")
    with pytest.raises(gateway.NotConfigured, match="LLM_KEY_"):
        generation.create_job(case_set=case_set, corpus_name="k", doctor_models=["d"], patient_model="p",
                              temperatures=[0.2], doctor_base_url="http://127.0.0.1:9/v1",
                              doctor_api_key_env="DATABASE_URL")
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"id": "c1", "self_report": "Cough."}\n')
    with pytest.raises(CommandError, match="LLM_KEY_"):
        call_command("generate_dialogues", cases=str(cases), doctor_model="d", patient_model="p",
                     base_url="http://127.0.0.1:9/v1", api_key_env="SECRET_KEY", stdout=io.StringIO(),
                     stderr=io.StringIO())
    assert not Corpus.objects.filter(name="k").exists()


# ----------------------------------------------------------------------------------------- endpoint ownership
def test_only_administrators_edit_endpoints(client, coordinator, admin_user):
    client.force_login(coordinator)
    add = reverse("admin:scoring_llmendpoint_add")
    assert client.get(add).status_code == 302  # not staff: sent to the admin login
    assert not coordinator.has_perm("scoring.change_llmendpoint") and not coordinator.has_perm(
        "scoring.add_llmendpoint")
    client.force_login(admin_user)
    assert client.get(add).status_code == 200
    refused = client.post(add, {"name": "leak", "base_url": "http://127.0.0.1:9/v1", "api_key_env": "SECRET_KEY",
                                "concurrency": 1, "timeout_seconds": 5, "is_active": "on",
                                "created_at_0": "2025-01-01", "created_at_1": "00:00:00"})
    assert refused.status_code == 200 and "LLM_KEY_" in refused.content.decode()
    assert not LLMEndpoint.objects.filter(name="leak").exists()


def test_an_endpoint_change_reaches_its_judges_but_not_started_runs(corpus, prompt_set, monkeypatch):
    monkeypatch.setenv("LLM_KEY_E", "sk-e")
    endpoint = LLMEndpoint.objects.create(name="e", base_url="http://127.0.0.1:9/v1", api_key_env="LLM_KEY_E",
                                          concurrency=2)
    config = JudgeConfig.objects.create(name="j", endpoint=endpoint, model="m", prompt_set=prompt_set)
    assert (config.base_url, config.api_key_env, config.concurrency) == ("http://127.0.0.1:9/v1", "LLM_KEY_E", 2)
    run = judging.create_run(config, corpus, item_codes=["1.1"])
    endpoint.base_url, endpoint.concurrency = "http://127.0.0.1:10/v1", 5
    endpoint.save()
    config.refresh_from_db()
    run.refresh_from_db()
    assert (config.base_url, config.concurrency) == ("http://127.0.0.1:10/v1", 5)
    assert (run.snapshot["base_url"], run.snapshot["concurrency"]) == ("http://127.0.0.1:9/v1", 2)


def test_existing_judges_get_endpoints_from_the_migration(prompt_set):
    import importlib

    from django.apps import apps

    migration = importlib.import_module("scoring.migrations.0005_llm_endpoints")
    LLMEndpoint.objects.all().delete()
    a = JudgeConfig.objects.create(name="a", base_url="https://api.example.org/v1", api_key_env="OPENAI_API_KEY",
                                   model="m", prompt_set=prompt_set, concurrency=3)
    JudgeConfig.objects.create(name="b", base_url="https://api.example.org/v1", api_key_env="OPENAI_API_KEY",
                                   model="n", prompt_set=prompt_set, concurrency=3)
    c = JudgeConfig.objects.create(name="c", model="m", prompt_set=prompt_set)  # OPENAI_BASE_URL defaults
    bad = JudgeConfig.objects.create(name="bad", base_url="https://x.example.org", model="m", prompt_set=prompt_set)
    JudgeConfig.objects.filter(pk=bad.pk).update(api_key_env="SECRET_KEY")
    migration.endpoints_from_judges(apps, None)
    by_name = {j.name: j for j in JudgeConfig.objects.select_related("endpoint")}
    assert by_name["a"].endpoint == by_name["b"].endpoint and by_name["a"].endpoint.concurrency == 3
    assert by_name["c"].endpoint.name == "Default (OPENAI_BASE_URL, OPENAI_API_KEY)"
    assert by_name["bad"].endpoint is None
    assert LLMEndpoint.objects.count() == 2
    assert by_name["a"].endpoint.name == "api.example.org with OPENAI_API_KEY" and a.pk and c.pk


# ----------------------------------------------------------------------------------------- provider error text
def test_sanitize_error_strips_headers_keys_and_credentials(monkeypatch):
    monkeypatch.setenv("LLM_KEY_LIVE", "live-secret-value-123")
    text = ("HTTP 401: Incorrect API key provided: live-secret-value-123. Request headers: {'Authorization': "
            "'Bearer sk-proj-abcdefghijklmnop', 'X-Api-Key': 'abc'} via https://bob:hunter2@proxy.example.org/v1"
            "?api_key=zzz " + "x" * 2000)
    clean = keys.sanitize_error(text)
    for secret in ("live-secret-value-123", "sk-proj-abcdefghijklmnop", "hunter2", "zzz", "'abc'"):
        assert secret not in clean
    assert clean.startswith("HTTP 401: Incorrect API key provided") and len(clean) <= keys.MAX_ERROR_CHARS
    assert keys.sanitize_error(clean) == clean


def test_provider_error_on_the_run_page_is_short_and_echoes_no_header(client, coordinator, corpus, prompt_set,
                                                                      monkeypatch):
    monkeypatch.setenv("LLM_KEY_LIVE", "sk-live-0123456789abcdef")
    with FakeOpenAI(responder=mini_cex_answer) as server:
        endpoint = LLMEndpoint.objects.create(name="e", base_url=server.base_url, api_key_env="LLM_KEY_LIVE")
        config = JudgeConfig.objects.create(name="j", endpoint=endpoint, model="m", prompt_set=prompt_set)
        run = judging.create_run(config, corpus, item_codes=["1.1"])
        judging.start(run)
        echo = ("Incorrect API key provided. You sent Authorization: Bearer sk-live-0123456789abcdef from "
                "10.1.2.3; " + "internal detail " * 100)
        server.inject({"status": 401, "message": echo})
        drain(run)
        assert server.request_count == 1
    assert run.status == JudgeRun.Status.PAUSED
    result = JudgeResult.objects.get(run=run)
    for stored in (run.error, result.error):
        assert "sk-live-0123456789abcdef" not in stored and "Incorrect API key provided" in stored
        assert len(stored) < 400
    client.force_login(coordinator)
    page = client.get(reverse("judge-run", args=[run.pk])).content.decode()
    assert "Incorrect API key provided" in page and "sk-live-0123456789abcdef" not in page
    assert "internal detail " * 30 not in page


@pytest.mark.integration
def test_the_server_secrets_can_never_be_listed_as_key_variables(tmp_path):
    from tests.test_startup import assert_one_line_error, run

    result = run(["manage.py", "check"], tmp_path, SECRET_KEY="k", LLM_KEY_VARIABLES="AZURE_KEY, DATABASE_URL")
    assert_one_line_error(result, "LLM_KEY_VARIABLES lists DATABASE_URL")
