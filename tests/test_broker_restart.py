"""The database is the source of truth for pending work; the broker only wakes workers up. A Redis restart (no
persistence, as on these machines) in the middle of a judge run, and while a report job's message is in it, loses
nothing: both finish, and every prompt is answered exactly once.

The test runs its own ``redis-server`` on a spare port (the shared one is untouched), a real worker and the real
``run_judge --wait`` command on it."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections import Counter

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import Corpus, Dialogue
from core.jobs.models import Job
from scoring.judges import runs as judging
from scoring.judges.models import JudgeResult, JudgeRun
from tests.conftest import BASE_DIR, worker_env
from tests.factories import campaign_with
from tests.fake_openai import FakeOpenAIProcess
from tests.services import RedisServer
from tests.test_reports import rate_everything


def wait_for(predicate, timeout: float, message: str) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if predicate():
            return time.monotonic()
        time.sleep(0.2)
    raise AssertionError(message)


@pytest.mark.integration
def test_a_judge_run_and_a_report_job_survive_a_broker_restart(workers, make_user):
    raters = [make_user(f"br{i}", "physician") for i in range(2)]
    campaign = campaign_with(raters, n=4, overlap=2, name="Broker report")
    rate_everything(campaign, random.Random(5))
    corpus = Corpus.objects.create(name="broker-restart")
    Dialogue.objects.bulk_create([
        Dialogue(corpus=corpus, external_id=f"r{i}", self_report=f"Fever for {i + 1} days.",
                 turns=[{"role": "doctor", "text": f"Hello ({i}), how long?"}, {"role": "patient", "text": "Days."}])
        for i in range(30)])
    with RedisServer() as redis, FakeOpenAIProcess(latency=0.2, extra_args=("--mini-cex",)) as server:
        env = {"CELERY_BROKER_URL": redis.url, "LIMITER_URL": redis.url, "LLM_KEY_MINICEX_TEST": "sk-test"}
        workers(concurrency=4, env=env)
        command = [sys.executable, "manage.py", "run_judge", "--corpus", corpus.name, "--model", "fake-judge",
                   "--base-url", server.base_url, "--api-key-env", "LLM_KEY_MINICEX_TEST", "--items", "1.1,2.1,4",
                   "--concurrency", "4", "--wait", "--poll", "0.5"]
        cli = subprocess.Popen(command, cwd=BASE_DIR, env={**worker_env(), **env}, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        try:
            wait_for(lambda: JudgeResult.objects.filter(status="done").count() >= 15, 90,
                     "the judge run made no progress")
            redis.stop()
            # While the broker is down a report is asked for and a second judge run is started: neither message
            # reaches a worker.
            job = Job.objects.create(kind=Job.Kind.CAMPAIGN_REPORT, enqueued_at=None, project=campaign.project,
                                     params={"campaign": campaign.pk, "fingerprint": "test", "names": False})
            config = JudgeRun.objects.get().config
            second = judging.create_run(config, corpus, item_codes=["1.2"])
            JudgeRun.objects.filter(pk=second.pk).update(status="running", started_at=timezone.now())
            time.sleep(2)
            redis.start()
            back = time.monotonic()
            resumed: dict[str, float] = {}

            def both_resumed() -> bool:
                if "report" not in resumed and Job.unscoped.get(pk=job.pk).status != "queued":
                    resumed["report"] = time.monotonic() - back
                if "judge" not in resumed and JudgeResult.objects.filter(run=second, status="done").exists():
                    resumed["judge"] = time.monotonic() - back
                return len(resumed) == 2

            wait_for(both_resumed, 30, f"not resumed within 30 s of the broker coming back: {resumed}")
            wait_for(lambda: Job.unscoped.get(pk=job.pk).is_finished, 120, "the report job did not finish")
            wait_for(lambda: JudgeRun.objects.get(pk=second.pk).status == "succeeded", 120,
                     "the second run did not finish")
            out, err = cli.communicate(timeout=180)
        finally:
            if cli.poll() is None:
                cli.kill()
        assert cli.returncode == 0, err[-2000:]
        run = JudgeRun.objects.exclude(pk=second.pk).get()
        assert run.status == "succeeded" and JudgeResult.objects.filter(run=run, status="done").count() == 90
        assert JudgeResult.objects.filter(run=second, status="done").count() == 30
        hashes = Counter(r["body_hash"] for r in server.requests() if r["path"].endswith("/chat/completions"))
        assert len(hashes) == 120 and max(hashes.values()) == 1  # every prompt answered exactly once
        assert "calls made: 90" in out
        job.refresh_from_db()
        assert job.status == "succeeded", job.error
        print(f"after the broker came back: the report job started in {resumed['report']:.1f} s, the lost "
              f"judge run in {resumed['judge']:.1f} s")
    assert os.environ.get("CELERY_BROKER_URL") != redis.url  # the shared broker was never touched


def test_pages_say_waiting_for_the_broker_then_resumed(instrument, monkeypatch, client, coordinator):
    """While the broker cannot be reached the run page and run_judge --wait say so (instead of a rate that falls),
    then that work resumed."""
    from annotation.models import ScaleVersion
    from core.site import health
    from scoring.judges.models import JudgeConfig
    from scoring.llm import delivery

    monkeypatch.setenv("LLM_KEY_MINICEX_TEST", "sk-test")
    corpus = Corpus.objects.create(name="broker notice")
    Dialogue.objects.create(corpus=corpus, external_id="n1", self_report="Cough.",
                            turns=[{"role": "doctor", "text": "Hello"}])
    config = JudgeConfig.objects.create(name="notice", base_url="http://127.0.0.1:9/v1",
                                        api_key_env="LLM_KEY_MINICEX_TEST", model="m",
                                        prompt_set=judging.default_prompt_set(ScaleVersion.objects.get(number=1)))
    run = judging.create_run(config, corpus, item_codes=["1.1"])
    judging.start(run)
    reachable = {"ok": False}
    monkeypatch.setattr(health, "check_broker", lambda timeout=3.0: {**reachable, "error": "connection refused"})
    monkeypatch.setattr(delivery, "_PING_EVERY", 0.0)
    delivery._state.update(reachable=True, down_since=None, up_since=None, checked=0.0)
    notice = judging.progress(run)["delivery"]
    assert notice["broker_reachable"] is False and notice["notice"].startswith("Waiting for the broker")
    client.force_login(coordinator)
    page = client.get(reverse("judge-run-progress", args=[run.pk])).content.decode()
    assert 'data-testid="delivery-notice"' in page and "Waiting for the broker" in page
    reachable["ok"] = True
    assert judging.progress(run)["delivery"]["notice"].startswith("Resumed")


def close_after_losing_redis(transport: str) -> tuple[Exception | None, int]:
    """A worker's broker connection as Celery leaves it when Redis dies: a task message received and not yet
    acknowledged, the consumer waiting in BRPOP, a remote-control channel with a fanout queue; Redis is killed, the
    connection collected and then closed as the worker does (``Consumer.on_connection_error_after_connected``).
    Returns what the close raised through kombu's clean-up, and how many messages the task channel still holds."""
    from kombu import Connection, Exchange, Queue
    from kombu.common import ignore_errors

    redis = RedisServer().start()
    try:
        connection = Connection(redis.url, transport=transport)
        tasks = connection.default_channel
        queue = Queue("restart-test", Exchange("restart-test"), "restart-test", channel=tasks)
        queue.declare()
        connection.Producer(tasks).publish({"job": 1}, exchange="restart-test", routing_key="restart-test")
        received = []
        connection.Consumer(queue, callbacks=[lambda body, message: received.append(message)], channel=tasks).consume()
        connection.drain_events(timeout=5)
        assert received
        tasks._brpop_start()
        control = connection.channel()
        broadcast = Queue("restart-test.pidbox", Exchange("restart-test.bcast", type="fanout"), auto_delete=True,
                          channel=control)
        broadcast.declare()
        connection.Consumer(broadcast, callbacks=[lambda body, message: None], channel=control).consume()
        redis.stop()
        connection.collect(socket_timeout=1)
        try:
            ignore_errors(connection, connection.close)
            received[0].ack()  # the job finished after the broker was lost
        except Exception as exc:  # noqa: BLE001 - the failure under test
            return exc, len(tasks.qos._delivered)
        return None, len(tasks.qos._delivered)
    finally:
        redis.stop()


def test_a_worker_that_loses_redis_holding_a_message_closes_its_connection_and_can_reconnect():
    """kombu's own Redis transport raises AttributeError here (the worker then exits with "Unrecoverable error");
    the app's transport (config.broker) raises nothing and forgets the messages Redis lost."""
    from kombu.transport import TRANSPORT_ALIASES

    import config.broker  # noqa: F401 - the app's transports

    assert TRANSPORT_ALIASES["redis"] == "config.broker:RedisTransport"
    error, _ = close_after_losing_redis("kombu.transport.redis:Transport")
    assert isinstance(error, AttributeError)
    assert close_after_losing_redis("redis") == (None, 0)
