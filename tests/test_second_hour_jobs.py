"""Runs and jobs as a newcomer meets them: an ended run has no ETA and nothing "to do";
no "no worker" alarm before an engine could have taken a new run up, and the command it suggests is the one
``make run`` uses; a refused ``run_judge`` leaves no judge behind; wording of estimates, caps, generation jobs and
the report's fingerprint; ``import_labels``' default campaign per corpus and ``--skip-unscored``."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from annotation.importers import ImportRejected
from annotation.instruments import install_shipped
from annotation.label_import import import_labels
from annotation.models import Campaign, Corpus, Dialogue, ScaleVersion
from scoring.generation import cases
from scoring.generation import services as generation
from scoring.generation.models import CaseSet, GeneratedDialogue, GenerationJob
from scoring.judges import runs as judging
from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun, PromptSet
from tests import hivmedqa_data as hiv

pytestmark = pytest.mark.django_db

NOWHERE = "http://127.0.0.1:9/v1"  # a local endpoint nobody listens on: runs can be created, nothing answers


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("LLM_KEY_MINICEX_TEST", "sk-test")
    return "LLM_KEY_MINICEX_TEST"


@pytest.fixture
def corpus(db):
    corpus = Corpus.objects.create(name="second hour")
    for i in range(3):
        Dialogue.objects.create(corpus=corpus, external_id=f"h{i}", self_report="Cough for a week.",
                                source_model="m", turns=[{"role": "doctor", "text": "Hello"}])
    return corpus


@pytest.fixture
def run(corpus, key, instrument):
    config = JudgeConfig.objects.create(name="nowhere", base_url=NOWHERE, api_key_env=key, model="m",
                                        prompt_set=judging.default_prompt_set(
                                            ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)))
    run = judging.create_run(config, corpus, item_codes=["1.1", "1.2"])
    judging.start(run)
    return run


def end(job, status: str) -> None:
    """The job ended (the engine marks it so) with its open units left open."""
    now = timezone.now()
    type(job).objects.filter(pk=job.pk).update(status=status, started_at=now - timedelta(seconds=40),
                                               finished_at=now, error="host gone")
    job.refresh_from_db()


# ---------------------------------------------------------------------------------------------------------------
# 3. an ended run shows no ETA and nothing remaining, in the page and the API
# ---------------------------------------------------------------------------------------------------------------
def test_a_failed_run_has_no_eta_and_nothing_to_do(run, client, coordinator):
    first_two = list(JudgeResult.objects.filter(run=run).order_by("pk").values_list("pk", flat=True)[:2])
    JudgeResult.objects.filter(pk__in=first_two).update(status=JudgeResult.Status.DONE, value=1)
    client.force_login(coordinator)
    running = judging.progress(run)
    assert running["remaining"] == 4 and running["not_done"] == 0 and not running["ended"]
    assert [s["label"] for s in running["segments"]] == ["scored", "to do"]
    page = client.get(reverse("judge-run-progress", args=[run.pk])).content.decode()
    assert "<dt>Remaining</dt><dd>4</dd>" in page and "<dt>ETA</dt>" in page

    end(run, JudgeRun.Status.FAILED)
    ended = judging.progress(run)
    assert ended["ended"] and ended["eta_seconds"] is None and ended["remaining"] == 0 and ended["not_done"] == 4
    assert [s["label"] for s in ended["segments"]] == ["scored", "not done"]
    page = client.get(reverse("judge-run-progress", args=[run.pk])).content.decode()
    for stale in ("Remaining", "ETA", "to do"):
        assert stale not in page, stale
    assert "<dt>Not done</dt><dd>4</dd>" in page and "4 not done" in page
    api = client.get(f"/api/judge-runs/{run.pk}/").json()["progress"]
    assert api["eta_seconds"] is None and api["remaining"] == 0 and api["not_done"] == 4 and api["ended"] is True


def test_an_ended_generation_job_has_no_eta_and_says_done_not_scored(key, client, coordinator):
    case_set = CaseSet.objects.create(name="cases")
    cases.import_cases(case_set, [json.dumps({"id": f"s{i}", "self_report": "A sore throat.", "language": "en"})
                                  for i in range(3)])
    job = generation.create_job(case_set=case_set, corpus_name="generated", doctor_models=["doc-a"],
                                patient_model="patient", temperatures=[0.2], doctor_base_url=NOWHERE,
                                doctor_api_key_env=key, patient_base_url=NOWHERE, patient_api_key_env=key,
                                max_turns=2)
    generation.start(job)
    first = GeneratedDialogue.objects.filter(job=job).order_by("pk").first()
    GeneratedDialogue.objects.filter(pk=first.pk).update(status=GeneratedDialogue.Status.DONE)
    running = generation.progress(job)
    assert [s["label"] for s in running["segments"]] == ["done", "to do"]  # dialogues are done, not "scored"
    end(job, GenerationJob.Status.CANCELLED)
    ended = generation.progress(job)
    assert ended["eta_seconds"] is None and ended["remaining"] == 0 and ended["not_done"] == 2
    assert ended["in_progress"] == 0 and [s["label"] for s in ended["segments"]] == ["done", "not done"]
    client.force_login(coordinator)
    page = client.get(reverse("generation-job-progress", args=[job.pk])).content.decode()
    assert "1 done" in page and "scored" not in page
    for stale in ("Remaining", "ETA", "to do", "In progress"):
        assert stale not in page, stale
    api = client.get(f"/api/generation-jobs/{job.pk}/").json()["progress"]
    assert api["eta_seconds"] is None and api["remaining"] == 0 and api["not_done"] == 2


# ---------------------------------------------------------------------------------------------------------------
# 4. no alarm before an engine could have taken the run up; the command is make run's
# ---------------------------------------------------------------------------------------------------------------
@pytest.fixture
def broker_up(monkeypatch):
    from core.site import health
    from scoring.llm import delivery

    monkeypatch.setattr(health, "check_broker", lambda timeout=3.0: {"ok": True})
    monkeypatch.setattr(delivery, "_PING_EVERY", 0.0)
    delivery._state.update(reachable=True, down_since=None, up_since=None, checked=0.0)


def test_a_new_run_gets_a_grace_period_then_the_command_make_run_uses(run, broker_up, settings):
    from config import run as launcher
    from scoring.llm import delivery

    assert judging.progress(run)["delivery"]["notice"] == ""  # just started: an engine takes it up within seconds
    JudgeRun.objects.filter(pk=run.pk).update(
        started_at=timezone.now() - timedelta(seconds=delivery.NO_WORKER_AFTER - 5))
    run.refresh_from_db()
    assert judging.progress(run)["delivery"]["notice"] == ""
    JudgeRun.objects.filter(pk=run.pk).update(
        started_at=timezone.now() - timedelta(seconds=delivery.NO_WORKER_AFTER + 5))
    run.refresh_from_db()
    notice = judging.progress(run)["delivery"]
    assert notice["level"] == "warning" and "No LLM worker is running" in notice["notice"]
    command = launcher.llm_worker_hint(settings.CELERY_LLM_QUEUE)
    assert command in notice["notice"] and "make run" in notice["notice"]
    # the hint is the worker make run starts: same queue, pool and concurrency
    started = launcher.worker_command(launcher.LLM_WORKER_CONCURRENCY, settings.CELERY_LLM_QUEUE,
                                      pool=launcher.LLM_WORKER_POOL)
    hint = command.split()
    for flag in ("--queues", "--pool", "--concurrency"):
        assert started[started.index(flag) + 1] == hint[hint.index(flag) + 1], flag
    assert "prefork" not in notice["notice"]
    # an answer stored lately is a working engine: no alarm
    JudgeRun.objects.filter(pk=run.pk).update(activity_at=timezone.now() - timedelta(seconds=3))
    run.refresh_from_db()
    assert judging.progress(run)["delivery"]["notice"] == ""


# ---------------------------------------------------------------------------------------------------------------
# 5. a refused run_judge leaves nothing behind
# ---------------------------------------------------------------------------------------------------------------
def test_run_judge_refused_for_an_unresolvable_host_creates_no_judge(corpus, key, instrument):
    before = (JudgeConfig.objects.count(), PromptSet.objects.count(), JudgeRun.objects.count())
    with pytest.raises(CommandError, match="does not resolve|could not be looked up"):
        call_command("run_judge", corpus=corpus.name, model="m", base_url="http://no-such-host.invalid/v1",
                     api_key_env=key, stdout=io.StringIO(), stderr=io.StringIO())
    with pytest.raises(CommandError, match="Unknown item code"):  # refused after the estimate: nothing either
        call_command("run_judge", corpus=corpus.name, model="m", base_url=NOWHERE, api_key_env=key, items="9.9",
                     stdout=io.StringIO(), stderr=io.StringIO())
    call_command("run_judge", corpus=corpus.name, model="m", base_url=NOWHERE, api_key_env=key, dry_run=True,
                 stdout=io.StringIO(), stderr=io.StringIO())
    assert (JudgeConfig.objects.count(), PromptSet.objects.count(), JudgeRun.objects.count()) == before
    # so neither the Judges list nor the preference study's "Ask this judge" menu offers one
    from scoring.preference.forms import JudgeForm
    from scoring.preference.models import PreferenceStudy

    study = PreferenceStudy.objects.create(name="s", kind=PreferenceStudy.Kind.EVALUATION, corpus=corpus)
    assert not JudgeForm(study=study).fields["config"].queryset.exists()
    out = io.StringIO()
    call_command("run_judge", corpus=corpus.name, model="m", base_url=NOWHERE, api_key_env=key, items="1.1",
                 stdout=out, stderr=io.StringIO())
    assert JudgeConfig.objects.count() == before[0] + 1 and JudgeRun.objects.count() == before[2] + 1


# ---------------------------------------------------------------------------------------------------------------
# 6. wording: the estimate's basis, the cap's currency, the fingerprint
# ---------------------------------------------------------------------------------------------------------------
def test_estimate_caps_and_fingerprint_read_plainly(run, client, coordinator, corpus, key, fake_llm):
    JudgeConfig.objects.filter(pk=run.config_id).update(base_url=fake_llm.base_url)  # the page needs a listener
    config = JudgeConfig.objects.get(pk=run.config_id)
    estimate = judging.estimate(config, corpus)
    assert estimate["completion_basis"] == "the judge's max_tokens, an upper bound"
    client.force_login(coordinator)
    page = client.post(reverse("judge-run-new"), {"config": config.pk, "corpus": corpus.pk}).content.decode()
    assert "Completion tokens (estimated)" in page and "from the judge&#x27;s max_tokens, an upper bound" in page
    assert "((" not in page and "(upper bound))" not in page
    for html in (page, client.get(reverse("judge-run-new")).content.decode(),
                 client.get(reverse("judge-run", args=[run.pk])).content.decode(),
                 client.get(reverse("generation-job-new")).content.decode()):
        assert "Spending cap (cost)" not in html
    assert "Spending cap (USD)" in page
    assert "Spending cap (USD)" in client.get(reverse("judge-run", args=[run.pk])).content.decode()
    JudgeConfig.objects.filter(pk=config.pk).update(currency="EUR")
    chosen = client.post(reverse("judge-run-new"), {"config": config.pk, "corpus": corpus.pk}).content.decode()
    assert "Spending cap (EUR)" in chosen
    body = render_to_string("scoring/partials/report_body.html", {"report": {
        "fingerprint": "f12d947d37ac4fbf", "empty": True, "n_labels": 0, "n_raters": 0, "n_dialogues": 0,
        "warnings": ["No submitted labels yet."], "words": {}}})
    assert "Data fingerprint <code>f12d947d37ac4fbf</code>" in body
    assert "changes whenever one of them does" in body


# ---------------------------------------------------------------------------------------------------------------
# 12. import_labels: a default campaign per corpus; judges' answers without a score left unscored on request
# ---------------------------------------------------------------------------------------------------------------
def lines(text: str) -> list[bytes]:
    return io.BytesIO(text.encode()).readlines()


def test_the_same_file_name_on_two_corpora_makes_two_campaigns(tmp_path, instrument):
    for name in ("Corpus A", "Corpus B"):
        corpus = Corpus.objects.create(name=name)
        Dialogue.objects.create(corpus=corpus, external_id="d1", self_report="Fever.",
                                turns=[{"role": "doctor", "text": "Hello"}])
    path = tmp_path / "labels.csv"
    path.write_text("dialogue_id,rater,item,value\nd1,ext-1,1.1,1\n")
    for name in ("Corpus A", "Corpus B"):
        call_command("import_labels", str(path), "--corpus", name, stdout=io.StringIO())
    names = dict(Campaign.objects.values_list("corpus__name", "name"))
    assert names == {"Corpus A": "Imported labels: labels.csv on Corpus A",
                     "Corpus B": "Imported labels: labels.csv on Corpus B"}
    path.write_text("dialogue_id,rater,item,value\nd1,ext-2,1.1,0\n")
    call_command("import_labels", str(path), "--corpus", "Corpus A", stdout=io.StringIO())  # added to its campaign
    assert Campaign.objects.count() == 2


@pytest.fixture
def hiv_corpus(db):
    from annotation.importers import import_dialogues

    version = install_shipped("hivmedqa-medgpt")[0]
    corpus = Corpus.objects.create(name="HIVMedQA answers")
    import_dialogues(corpus, hiv.answers_jsonl())
    return corpus, version


def off_grid_file() -> tuple[str, str, dict[str, int]]:
    """HIVMedQA's judge file, scores left to the raw responses, one answer scoring bias 6 on its 0-5 grid: the file,
    that answer's id and the line each of its rows starts on (raw responses span several lines)."""
    import csv

    answer = hiv.answer_id("model-b", 4, 2)
    reader = csv.reader(io.StringIO(hiv.judge_csv(with_values=False)))
    out = io.StringIO()
    writer = csv.writer(out)
    starts, last = {}, 0
    for row in reader:
        if row and row[0] == answer:
            starts[row[2]] = last + 1
            response = json.loads(row[7].split("```json\n", 1)[1].rsplit("\n```", 1)[0])
            response["question 4"] = 6
            row[7] = "Here is my evaluation.\n```json\n" + json.dumps(response, indent=2) + "\n```"
        last = reader.line_num
        writer.writerow(row)
    return out.getvalue(), answer, starts


def test_an_off_grid_raw_answer_is_reported_per_line_and_left_unscored_on_request(hiv_corpus, tmp_path):
    corpus, version = hiv_corpus
    text, answer, starts = off_grid_file()
    bias_line = starts["bias"]
    with pytest.raises(ImportRejected) as refused:
        import_labels(corpus, lines(text), file_name="judge.csv", scale_version=version)
    assert [e.line for e in refused.value.errors] == [bias_line]
    assert "--skip-unscored" in refused.value.errors[0].message and "bias" in refused.value.errors[0].message
    assert not JudgeRun.objects.exists()

    path = tmp_path / "judge.csv"
    path.write_text(text)
    out = io.StringIO()
    call_command("import_labels", str(path), "--corpus", corpus.name, "--scale", "hivmedqa-medgpt",
                 "--skip-unscored", stdout=out)
    printed = out.getvalue()
    assert f"line {bias_line}: raw_response gives no score on item bias's scale" in printed, printed
    assert "imported unscored" in printed and "1 of them unscored" in printed
    run = JudgeRun.objects.get()
    assert run.status == JudgeRun.Status.PROBLEMS and "1 answer(s)" in run.error
    results = JudgeResult.objects.filter(run=run)
    assert results.count() == len(hiv.judge_scores()) * len(hiv.CRITERIA)
    unscored = results.get(status=JudgeResult.Status.UNSCORED)
    assert unscored.dialogue.external_id == answer and unscored.item.code == "bias" and unscored.value is None
    assert f"line {bias_line}" in unscored.error and '"question 4": 6' in unscored.rationale
    assert results.filter(status=JudgeResult.Status.DONE, dialogue__external_id=answer).count() == 4
    assert ScaleVersion.objects.filter(pk=version.pk).exists()

