"""Judge runs through the provider's Batch API (/v1/files + /v1/batches) against the fake server: the same request
cache, per-unit results, retries and resume as live runs, at half the price."""

import time
from decimal import Decimal

import pytest
from django.urls import reverse

from annotation.models import Corpus, Dialogue, ScaleVersion
from scoring.judges import runs as judging
from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun
from scoring.llm import batch, engine, limiter
from scoring.llm.models import LLMBatch, LLMCall
from tests.conftest import wait_until
from tests.fake_openai import FakeOpenAI, mini_cex_answer


@pytest.fixture
def server():
    with FakeOpenAI(responder=mini_cex_answer) as fake:
        fake.batch_delay = 0.1
        yield fake


@pytest.fixture
def corpus(db):
    corpus = Corpus.objects.create(name="batched")
    for i in range(3):
        Dialogue.objects.create(corpus=corpus, external_id=f"b{i}", self_report=f"Back pain for {i + 1} weeks.",
                                turns=[{"role": "doctor", "text": f"Hello, where does it hurt ({i})?"},
                                       {"role": "patient", "text": "Low in my back."}])
    return corpus


def make_config(server, monkeypatch, name="batch judge", **extra) -> JudgeConfig:
    monkeypatch.setenv("LLM_KEY_MINICEX_TEST", "sk-test")
    version = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
    config = JudgeConfig.objects.create(
        name=name, base_url=server.base_url, api_key_env="LLM_KEY_MINICEX_TEST", model="fake-judge",
        prompt_set=judging.default_prompt_set(version), timeout_seconds=5, max_attempts=3,
        price_input_per_1k="1.0", price_output_per_1k="2.0", **extra)
    limiter.reset(f"judge-{config.pk}")
    return config


def provider_done(server, provider_id: str) -> bool:
    return server.batch_object(provider_id)["status"] == "completed"


def test_a_batch_run_uploads_one_file_polls_and_stores_every_answer_at_half_price(instrument, server, corpus,
                                                                                    monkeypatch):
    run = judging.create_run(make_config(server, monkeypatch), corpus, item_codes=["1.1", "4"], batch=True)
    judging.start(run)
    submitted = batch.submit(judging.HANDLER, run, engine.engine_owner())
    assert submitted is not None and len(submitted.requests) == 6 and len(server.chat_requests) == 0
    assert set(JudgeResult.objects.filter(run=run).values_list("claimed_by", flat=True)) == {submitted.owner}
    # While the batch is open its units are held by it: no engine claims them.
    assert engine.claim(judging.HANDLER, run, 10, "another-engine") == []
    page = judging.progress(run)
    assert page["delivery"]["batches"][0]["requests"] == 6
    wait_until(lambda: provider_done(server, submitted.provider_id), 10, "the fake batch did not complete")
    assert batch.poll(submitted.pk) == "completed"
    run.refresh_from_db()
    assert run.status == "succeeded" and JudgeResult.objects.filter(run=run, status="done").count() == 6
    assert len(server.batch_requests) == 6 and len(server.chat_requests) == 0
    call = LLMCall.objects.first()
    assert call.cost == (Decimal(call.prompt_tokens) * Decimal("0.5") + Decimal(call.completion_tokens)) / 1000
    assert LLMBatch.objects.get(pk=submitted.pk).status == "completed"


def test_failed_lines_are_retried_in_a_later_batch_and_the_cache_serves_a_rerun(instrument, server, corpus,
                                                                              monkeypatch):
    config = make_config(server, monkeypatch)
    run = judging.create_run(config, corpus, item_codes=["1.1"], batch=True)
    judging.start(run)
    server.batch_fail_lines = [{"line": 1, "status": 500}]
    first = batch.submit(judging.HANDLER, run, engine.engine_owner())
    wait_until(lambda: provider_done(server, first.provider_id), 10, "the fake batch did not complete")
    batch.poll(first.pk)
    retried = JudgeResult.objects.get(run=run, status="pending")
    assert retried.attempts == 1 and "HTTP 500" in retried.error and retried.claimed_by == ""
    server.batch_fail_lines = []
    JudgeResult.objects.filter(pk=retried.pk).update(not_before=None)
    second = batch.submit(judging.HANDLER, run, engine.engine_owner())
    assert len(second.requests) == 1
    wait_until(lambda: provider_done(server, second.provider_id), 10, "the second batch did not complete")
    batch.poll(second.pk)
    run.refresh_from_db()
    assert run.status == "succeeded" and len(server.batch_requests) == 4
    again = judging.create_run(config, corpus, item_codes=["1.1"], batch=True)
    assert judging.estimate(config, corpus, item_codes=["1.1"], batch=True)["calls"] == 0
    judging.start(again)
    assert batch.submit(judging.HANDLER, again, engine.engine_owner()) is None  # everything came from the cache
    again.refresh_from_db()
    assert again.status == "succeeded" and len(server.batch_requests) == 4


def test_a_refused_key_pauses_a_batch_run_with_the_providers_message(instrument, corpus, monkeypatch):
    with FakeOpenAI(responder=mini_cex_answer, require_api_key="sk-other") as server:
        run = judging.create_run(make_config(server, monkeypatch), corpus, item_codes=["1.1"], batch=True)
        judging.start(run)
        submitted = batch.submit(judging.HANDLER, run, engine.engine_owner())
        run.refresh_from_db()
        assert submitted.status == "failed" and run.status == "paused" and "refused the key" in run.error
        assert run.requests_sent == 3  # the batch's lines count as sent, whatever became of it
        assert not JudgeResult.objects.filter(run=run).exclude(claimed_by="").exists()


def test_cancelling_a_batch_run_cancels_at_the_provider(instrument, server, corpus, monkeypatch, coordinator):
    server.batch_delay = 30
    run = judging.create_run(make_config(server, monkeypatch), corpus, item_codes=["1.1"], batch=True)
    judging.start(run)
    submitted = batch.submit(judging.HANDLER, run, engine.engine_owner())
    judging.set_status(run, JudgeRun.Status.CANCELLED, coordinator, "wrong corpus")
    assert server.batch_object(submitted.provider_id)["status"] == "cancelling"
    assert LLMBatch.objects.get(pk=submitted.pk).status == "cancelled"


def test_the_run_page_shows_the_batch(instrument, server, corpus, monkeypatch, client, coordinator):
    run = judging.create_run(make_config(server, monkeypatch), corpus, item_codes=["1.1"], batch=True)
    judging.start(run)
    submitted = batch.submit(judging.HANDLER, run, engine.engine_owner())
    client.force_login(coordinator)
    html = client.get(reverse("judge-run", args=[run.pk])).content.decode()
    assert 'data-testid="batches"' in html and submitted.provider_id in html


@pytest.mark.integration
def test_a_batch_run_finishes_through_a_worker(workers, server, monkeypatch):
    monkeypatch.setenv("LLM_BATCH_POLL_SECONDS", "1")
    corpus = Corpus.objects.create(name=f"batch-{time.time()}")
    for i in range(4):
        Dialogue.objects.create(corpus=corpus, external_id=f"w{i}", self_report="Dizzy.",
                                turns=[{"role": "doctor", "text": f"Hello {i}"}, {"role": "patient", "text": "Hi"}])
    workers(concurrency=2)
    run = judging.create_run(make_config(server, monkeypatch), corpus, item_codes=["1.1", "2.1"], batch=True)
    judging.start(run)
    wait_until(lambda: JudgeRun.objects.get(pk=run.pk).status == "succeeded", 60, "the batch run did not finish")
    assert JudgeResult.objects.filter(run=run, status="done").count() == 8
    assert len(server.chat_requests) == 0 and len(server.batch_requests) == 8
