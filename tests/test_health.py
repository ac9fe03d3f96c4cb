"""/healthz and the end-to-end worker check with a real Celery worker process."""

import time

import pytest
from django.urls import reverse

from core.jobs import services as jobs
from core.jobs.models import Job


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("condition not met in time")


@pytest.mark.integration
def test_a_real_worker_answers_healthz_the_system_page_and_the_worker_check(client, celery_worker, admin_user,
                                                                          coordinator):
    """One worker process for the three (each start and stop of a worker costs seconds): /healthz sees it, the
    system page's check runs through htmx, and the check's job reaches the database through it."""
    assert client.get("/healthz").json() == {"status": "ok"}
    client.force_login(admin_user)
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 200, body
    assert body["database"]["ok"] and body["broker"]["ok"] and body["workers"]["ok"]
    assert celery_worker.name in body["workers"]["workers"]

    # The page never waits for the ping: the first view may say "checking" while it runs behind the page.
    wait_for(lambda: "all services up" in client.get(reverse("system")).content.decode())
    started = client.post(reverse("worker-check"), HTTP_HX_REQUEST="true").content.decode()
    assert 'hx-trigger="load delay:1s"' in started
    job = Job.unscoped.latest("id")
    wait_for(lambda: Job.unscoped.get(pk=job.pk).is_finished)
    final = client.get(reverse("job-status", args=[job.pk])).content.decode()
    assert 'data-status="succeeded"' in final and "hx-trigger" not in final

    job = jobs.submit(Job.Kind.WORKER_CHECK, user=coordinator, project=None)  # instance-wide
    done = wait_for(lambda: Job.unscoped.filter(pk=job.pk, status__in=["succeeded", "failed"]).first())
    assert done.status == "succeeded", done.error
    assert done.result["items"] == 27 and done.result["scale_versions"] == 1
    assert done.result["worker_pid"] != __import__("os").getpid()
    assert done.attempts == 1 and done.finished_at >= done.started_at


def test_healthz_is_503_without_a_worker(client, admin_user):
    from config.celery import app

    app.control.purge()
    anonymous = client.get("/healthz")
    assert anonymous.status_code == 503 and anonymous.json() == {"status": "degraded"}
    client.force_login(admin_user)
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 503
    assert body["database"]["ok"] and body["broker"]["ok"]
    assert not body["workers"]["ok"] and "no Celery worker" in body["workers"]["error"]


@pytest.fixture
def fresh_broker_pool():
    """The app's connection pool is made on first use from the connection of that moment: a test that points the
    app at a dead broker puts back the pools it found, so later tests of this process reach the real broker."""
    from config.celery import app

    pool, producers = app._pool, app.amqp._producer_pool
    yield
    app._pool, app.amqp._producer_pool = pool, producers


def test_healthz_is_503_when_the_broker_is_unreachable(client, monkeypatch, admin_user, fresh_broker_pool):
    from config.celery import app

    # Every connection the app opens goes to a port nobody listens on. (Patching the settings would not do: the
    # broker URL properties prefer CELERY_BROKER_URL from the environment, and restoring them one by one restores
    # values read while the first one was already patched.)
    monkeypatch.setattr(app, "connection_for_write",
                        lambda url=None, **kwargs: app._connection("redis://127.0.0.1:1/0", **kwargs))
    client.force_login(admin_user)
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 503
    assert not body["broker"]["ok"] and body["broker"]["error"]
    assert body["workers"]["error"] == "broker unreachable"


def test_job_failure_is_recorded(db, monkeypatch):
    def boom(job):
        raise RuntimeError("disk full")

    monkeypatch.setitem(jobs.HANDLERS, Job.Kind.WORKER_CHECK, boom)
    job = Job.unscoped.create(kind=Job.Kind.WORKER_CHECK)
    with pytest.raises(RuntimeError):
        jobs.execute(job.pk)
    job.refresh_from_db()
    assert job.status == "failed" and "disk full" in job.error


def test_redelivered_finished_job_is_not_run_again(db):
    job = Job.unscoped.create(kind=Job.Kind.WORKER_CHECK)
    jobs.execute(job.pk)
    jobs.execute(job.pk)
    job.refresh_from_db()
    assert job.attempts == 1


def test_celery_is_configured_for_reliable_delivery(settings):
    from config.celery import app

    assert app.conf.task_acks_late is True
    assert app.conf.task_reject_on_worker_lost is True
    assert app.conf.worker_prefetch_multiplier == 1
    assert app.conf.task_serializer == "json" and app.conf.accept_content == ["json"]
    assert app.conf.task_time_limit > app.conf.task_soft_time_limit > 0


def test_health_details_show_the_oldest_pending_llm_unit(instrument, monkeypatch):
    from datetime import timedelta

    from django.utils import timezone

    from annotation.models import Corpus, Dialogue, ScaleVersion
    from core.site.health import health
    from scoring.judges import runs as judging
    from scoring.judges.models import JudgeConfig, JudgeResult

    monkeypatch.setenv("LLM_KEY_MINICEX_TEST", "sk-test")
    corpus = Corpus.objects.create(name="health")
    Dialogue.objects.create(corpus=corpus, external_id="h1", self_report="Cough.",
                            turns=[{"role": "doctor", "text": "Hello"}])
    config = JudgeConfig.objects.create(name="health judge", base_url="http://127.0.0.1:9/v1",
                                        api_key_env="LLM_KEY_MINICEX_TEST", model="m",
                                        prompt_set=judging.default_prompt_set(ScaleVersion.objects.get(number=1)))
    run = judging.create_run(config, corpus, item_codes=["1.1"])
    judging.start(run)
    JudgeResult.objects.filter(run=run).update(updated_at=timezone.now() - timedelta(minutes=5))
    _, body = health()
    work = body["llm_work"]
    assert work["running_jobs"]["judge"] == 1 and 299 < work["oldest_pending_unit_seconds"] < 400
    assert body["broker"]["ok"] in (True, False)


def test_each_test_process_pings_only_its_own_workers():
    """On a shared Redis broker the other test process's workers answered this process's ping: the health check's
    "no worker" test then saw a worker. Each process broadcasts on an exchange of its own (tests/xdist_env.py)."""
    import os

    from config.celery import app
    from tests.xdist_env import isolate

    first, second = {}, {}
    isolate("gw0", first)
    isolate("gw1", second)
    assert first["CELERY_CONTROL_EXCHANGE"] != second["CELERY_CONTROL_EXCHANGE"]
    assert app.conf.control_exchange == os.environ.get("CELERY_CONTROL_EXCHANGE", "celery")
