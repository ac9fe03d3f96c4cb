"""The built-in fake endpoint (``python -m config.run fake-llm``): its answers are what the real parsers read, and a
newcomer runs a judge, a preference judging and a generation job end to end through the workers without a key."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from annotation.models import Corpus, Dialogue, Item, ScaleVersion
from scoring.generation import services as generation
from scoring.generation.models import GenerationJob
from scoring.judges import runs as judging
from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun
from scoring.judges.prompts import dialogue_schema, item_question, parse_dialogue, parse_item
from scoring.llm import fake
from scoring.llm.models import LLMEndpoint
from scoring.preference import judging as preference_judging
from scoring.preference.judging import parse_choices
from scoring.preference.judging import schema as preference_schema
from scoring.preference.models import PreferenceJudgeRun
from tests.conftest import BASE_DIR, wait_until
from tests.test_generation import OSCE, SELF, case_set
from tests.test_preference import answers_jsonl, open_with


@pytest.fixture
def fake_server():
    server = fake.serve(port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def ask(content: str, system: str = "You are a judge.", **extra) -> str:
    return fake.chat_answer({"model": "fake-judge", "messages": [{"role": "system", "content": system},
                                                                 {"role": "user", "content": content}], **extra})


def test_its_answers_are_read_by_the_real_parsers(instrument):
    items = list(ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1).rating_items()
                 .prefetch_related("levels"))
    for item in items:
        value, _ = parse_item(ask(f"Doctor: Hello\n\n{item_question(item)}"), item)
        assert value in item.allowed_values(), item.code
    content = ask("Rate it.", response_format={"type": "json_schema", "json_schema": {
        "name": "x", "strict": True, "schema": dialogue_schema(items)}})
    assert set(parse_dialogue(content, items)) == {i.code for i in items}
    codes = ["accuracy", "fluency"]
    content = ask("Compare.", response_format={"type": "json_schema", "json_schema": {
        "name": "p", "strict": True, "schema": preference_schema(codes)}})
    assert set(parse_choices(content, codes)) == set(codes)


def test_a_scale_item_gets_a_point_of_its_range():
    item = Item(code="c", response_type=Item.ResponseType.SCALE, scale_min=1, scale_max=10)
    value, _ = parse_item(ask("Answer with a whole number from 1 to 10 (1 = poor) on the first line."), item)
    assert 1 <= value <= 10


def test_the_doctor_asks_then_diagnoses_after_its_end_marker():
    system = 'You are a doctor ... write "DONE NOW: [diagnosis here]" followed by your advice.'
    first = fake.chat_answer({"model": "d", "messages": [{"role": "system", "content": system},
                                                          {"role": "user", "content": "I have a cough."}]})
    assert first.endswith("?")
    later = fake.chat_answer({"model": "d", "messages": [
        {"role": "system", "content": system}, {"role": "user", "content": "I have a cough."},
        {"role": "assistant", "content": "Since when?"}, {"role": "user", "content": "Three days."},
        {"role": "assistant", "content": "Fever?"}, {"role": "user", "content": "Yes."}]})
    assert later.startswith("DONE NOW:")


def test_the_command_serves_openai_shaped_answers(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "config.run", "fake-llm", "--port", "0"], cwd=BASE_DIR,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = proc.stdout.readline()
        assert "Fake LLM endpoint (synthetic answers) at http://127.0.0.1:" in line
        base = line.split(" at ", 1)[1].split(" ", 1)[0]
        models = json.load(urllib.request.urlopen(f"{base}/models", timeout=5))
        assert {m["id"] for m in models["data"]} >= {"fake-judge"}
        request = urllib.request.Request(f"{base}/chat/completions", method="POST", headers={
            "Content-Type": "application/json"}, data=json.dumps({"model": "fake-judge", "messages": [
                {"role": "user", "content": "Answer Yes or No on the first line."}]}).encode())
        body = json.load(urllib.request.urlopen(request, timeout=5))
        assert body["choices"][0]["message"]["content"].split("\n")[0] in ("Yes", "No")
        assert body["usage"]["prompt_tokens"] > 0
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.integration
def test_a_newcomer_runs_a_judge_a_preference_judge_and_generation_without_a_key(workers, fake_server, coordinator,
                                                                                 make_user):
    endpoint = LLMEndpoint.objects.create(name="fake", base_url=fake_server, concurrency=4, timeout_seconds=10)
    version = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
    config = JudgeConfig.objects.create(name="try it", endpoint=endpoint, model="fake-judge",
                                        prompt_set=judging.default_prompt_set(version))
    corpus = Corpus.objects.create(name="first corpus")
    for i in range(3):
        Dialogue.objects.create(corpus=corpus, external_id=f"f{i}", self_report="Headache.",
                                turns=[{"role": "doctor", "text": f"Hello ({i}), how can I help?"},
                                       {"role": "patient", "text": "My head hurts."}])
    workers(concurrency=4)
    run = judging.create_run(config, corpus, item_codes=["1.1", "2.1", "4"], user=coordinator)
    judging.start(run, coordinator)

    from scoring.preference import services as preference

    study = preference.create_study(name="fake pairs", kind="answer", criteria="response", overlap=1, seed=1,
                                    user=coordinator)
    preference.import_answers(study, answers_jsonl(2), coordinator)
    open_with(study, [make_user(f"p{i}", "physician", password="a-long-password-1") for i in range(2)], coordinator)
    pref_run = preference_judging.create_run(study, config, coordinator)
    preference_judging.start(pref_run, coordinator)

    cases = case_set(SELF, OSCE, name="fake cases")
    job = generation.create_job(case_set=cases, corpus_name="fake generated", doctor_models=["fake-doctor"],
                                patient_model="fake-patient", temperatures=[0.2], doctor_base_url=fake_server,
                                patient_base_url=fake_server, max_turns=5, concurrency=4, user=coordinator)
    generation.start(job, coordinator)

    def all_done() -> bool:
        return (JudgeRun.objects.get(pk=run.pk).status == "succeeded"
                and PreferenceJudgeRun.objects.get(pk=pref_run.pk).status == "succeeded"
                and GenerationJob.objects.get(pk=job.pk).status == "succeeded")

    started = time.monotonic()
    wait_until(all_done, 90, "the three jobs did not all finish")
    assert time.monotonic() - started < 90
    assert JudgeResult.objects.filter(run=run, status="done").count() == 9
    assert preference_judging.combined(pref_run)["verdicts"]
    job.refresh_from_db()
    assert job.corpus.dialogues.count() == 2
    for dialogue in job.corpus.dialogues.all():
        assert dialogue.turns[-1]["text"].startswith("DIAGNOSIS READY:")
