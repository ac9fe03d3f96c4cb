"""Judge runs through real Celery worker processes: progress from the database, and a worker killed with
SIGKILL mid-run loses no result and repeats no request except those in flight."""

import time
from collections import Counter

import pytest

from annotation import labels
from annotation.models import Corpus, Dialogue, ScaleVersion
from scoring.judges import runs as judging
from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun
from scoring.llm import limiter
from tests.conftest import wait_until
from tests.fake_openai import FakeOpenAI, mini_cex_answer

pytestmark = pytest.mark.integration


def make_run(server, monkeypatch, n_dialogues: int, codes: list[str], concurrency: int,
             timeout: float = 2) -> JudgeRun:
    labels._allowed.cache_clear()
    monkeypatch.setenv("LLM_KEY_MINICEX_TEST", "sk-test")
    corpus = Corpus.objects.create(name=f"kill-{time.time()}")
    for i in range(n_dialogues):
        Dialogue.objects.create(corpus=corpus, external_id=f"k{i}", self_report=f"Cough for {i + 1} days.",
                                turns=[{"role": "doctor", "text": f"Hello, tell me about the cough ({i})."},
                                       {"role": "patient", "text": "It started after a cold."}])
    version = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
    config = JudgeConfig.objects.create(
        name=f"worker-judge-{time.time()}", base_url=server.base_url, api_key_env="LLM_KEY_MINICEX_TEST",
        model="fake-judge", prompt_set=judging.default_prompt_set(version), concurrency=concurrency,
        timeout_seconds=timeout, max_attempts=5)
    limiter.reset(f"judge-{config.pk}")
    run = judging.create_run(config, corpus, item_codes=codes)
    judging.start(run)
    return run


def test_run_completes_through_a_worker_within_the_concurrency_limit(workers, monkeypatch):
    with FakeOpenAI(latency=0.2, responder=mini_cex_answer) as server:
        workers(concurrency=6)
        run = make_run(server, monkeypatch, n_dialogues=6, codes=["1.1", "2.1", "4"], concurrency=3)
        wait_until(lambda: JudgeRun.objects.get(pk=run.pk).status == "succeeded", 60, "run did not finish")
        assert len(server.chat_requests) == 18
        assert server.max_concurrency <= 3
        assert JudgeResult.objects.filter(run=run, status="done").count() == 18


def test_killed_worker_loses_nothing_and_repeats_only_in_flight_requests(workers, monkeypatch):
    with FakeOpenAI(latency=0.3, responder=mini_cex_answer) as server:
        first = workers(concurrency=4)
        # A 30 s timeout: the claims, slots and reservations of the killed engine would hold for 50 s (1.5 x the
        # timeout + 5 s); they are free as soon as it is found dead.
        run = make_run(server, monkeypatch, n_dialogues=12, codes=["1.1", "1.2", "2.1"], concurrency=4, timeout=30)
        wait_until(lambda: JudgeResult.objects.filter(run=run, status="done").count() >= 8, 60,
                   "the first worker made no progress")
        first.kill()
        killed = time.monotonic()
        in_flight_at_kill = server.in_flight
        sent_before = len(server.chat_requests)
        assert JudgeRun.objects.get(pk=run.pk).status == "running"
        workers(concurrency=4)  # a new worker frees the dead engine's claims and slots and resumes the run
        ready = time.monotonic()
        wait_until(lambda: len(server.chat_requests) > sent_before, 10,
                   "the run did not resume within 10 s of the new worker starting")
        resumed_after = time.monotonic() - ready
        wait_until(lambda: JudgeRun.objects.get(pk=run.pk).status == "succeeded", 90, "run did not resume")
        assert resumed_after < 10
        assert time.monotonic() - killed < 45  # the whole run's rest took less than the dead engine's lease
        assert JudgeResult.objects.filter(run=run).exclude(status="done").count() == 0
        assert JudgeResult.objects.filter(run=run).count() == 36
        repeats = sum(n - 1 for n in Counter(r["body_hash"] for r in server.chat_requests).values() if n > 1)
        assert repeats <= 4, (repeats, in_flight_at_kill)
        assert len(server.chat_requests) <= 36 + 4
        assert sent_before < len(server.chat_requests)


def test_run_judge_command_waits_and_a_rerun_makes_zero_calls(workers, monkeypatch):
    import io

    from django.core.management import call_command
    from django.core.management.base import CommandError

    monkeypatch.setenv("LLM_KEY_MINICEX_TEST", "sk-test")
    corpus = Corpus.objects.create(name="cli-corpus")
    for i in range(4):
        Dialogue.objects.create(corpus=corpus, external_id=f"c{i}", self_report="Fever.",
                                turns=[{"role": "doctor", "text": f"Hello {i}"}, {"role": "patient", "text": "Hi"}])
    with FakeOpenAI(latency=0.05, responder=mini_cex_answer) as server:
        workers(concurrency=4)
        args = dict(corpus="cli-corpus", model="fake-judge", base_url=server.base_url,
                    api_key_env="LLM_KEY_MINICEX_TEST",
                    items="1.1,4", wait=True, poll=0.2)
        out, err = io.StringIO(), io.StringIO()
        call_command("run_judge", stdout=out, stderr=err, **args)
        assert "succeeded" in out.getvalue() or "finished" in out.getvalue()
        assert "calls made: 8" in out.getvalue() and len(server.chat_requests) == 8
        out = io.StringIO()
        call_command("run_judge", stdout=out, stderr=io.StringIO(), **args)
        assert "calls made: 0  cached: 8" in out.getvalue() and len(server.chat_requests) == 8
        server.inject({"status": 401})
        with pytest.raises(CommandError, match="Incorrect API key"):
            call_command("run_judge", stdout=io.StringIO(), stderr=io.StringIO(), **{**args, "items": "2.2"})
