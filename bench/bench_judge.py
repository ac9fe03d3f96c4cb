"""Benchmark: a per-item judge run of 2,000 calls against the fake OpenAI-compatible endpoint (issue 5).

Target: 300 ms latency per call, concurrency limit 16 -> ideal 2,000 x 0.3 / 16 = 37.5 s; the run must finish
within 10% of that (41.25 s) with the Celery worker(s) on this 2-core machine; a re-run makes zero calls and
finishes in under 10 s.

Setup: PostgreSQL (BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/minicex_bench_judge, created and
migrated), Redis broker and limiter (redis://127.0.0.1:6379/4), the fake server in its own process, and
BENCH_WORKERS worker processes (default 4) each with a threads pool of BENCH_THREADS (default 6)
consuming the LLM queue.

Run:  cd /work/main && .venv/bin/python bench/bench_judge.py
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
DATABASE_URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/minicex_bench_judge")
ENV = {
    "DATABASE_URL": DATABASE_URL, "CELERY_BROKER_URL": "redis://127.0.0.1:6379/4", "SECRET_KEY": "bench-judge",
    "DJANGO_SETTINGS_MODULE": "config.settings", "LOG_LEVEL": "WARNING", "LLM_KEY_BENCH_JUDGE": "sk-bench",
    "CELERY_TASK_DEFAULT_QUEUE": "bench-judge", "CELERY_LLM_QUEUE": "bench-judge-llm", "DEBUG": "0",
}
os.environ.update(ENV)
CALLS, LATENCY, CONCURRENCY = 2000, 0.3, 16
IDEAL = CALLS * LATENCY / CONCURRENCY
ITEMS = ["1.1", "1.2", "1.3", "1.4", "2.1", "2.2", "2.3", "2.4"]


def ensure_database() -> None:
    import psycopg
    from psycopg import sql

    parts = urlsplit(DATABASE_URL)
    name = parts.path.lstrip("/")
    with psycopg.connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def wait_run(run_id: int, timeout: float) -> float:
    from scoring.judges.models import JudgeRun

    started = time.monotonic()
    while time.monotonic() - started < timeout:
        status = JudgeRun.objects.filter(pk=run_id).values_list("status", flat=True).first()
        if status not in ("queued", "running"):
            return time.monotonic() - started
        time.sleep(0.1)
    raise RuntimeError("run did not finish in time")


def main() -> int:
    from bench.machine import calibration_line

    print(calibration_line())
    ensure_database()
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from annotation.models import Corpus, Dialogue, ScaleVersion
    from config.celery import app
    from scoring.judges import runs as judging
    from scoring.judges.models import JudgeConfig
    from scoring.llm import limiter
    from tests.fake_openai import FakeOpenAIProcess, fetch_requests, fetch_stats

    n_dialogues = CALLS // len(ITEMS)
    corpus = Corpus.objects.create(name="bench-judge")
    Dialogue.objects.bulk_create([Dialogue(
        corpus=corpus, external_id=f"b{i:04d}", self_report=f"Cough for {i % 9 + 1} days.", source_model="m",
        turns=[{"role": "doctor" if t % 2 == 0 else "patient", "text": f"Turn {t} of dialogue {i}: " + "word " * 20}
               for t in range(12)]) for i in range(n_dialogues)])
    with app.connection_for_write() as conn:
        for queue in ("bench-judge", "bench-judge-llm"):
            with contextlib.suppress(Exception):  # the queue may not exist yet
                conn.default_channel.queue_purge(queue)
    workers = []
    fake = FakeOpenAIProcess(latency=LATENCY, extra_args=("--mini-cex",)).start()
    try:
        config = JudgeConfig.objects.create(
            name="bench", base_url=fake.base_url, api_key_env="LLM_KEY_BENCH_JUDGE", model="fake-judge",
            concurrency=CONCURRENCY, timeout_seconds=10,
            prompt_set=judging.default_prompt_set(ScaleVersion.objects.get(number=1)))
        limiter.reset(f"judge-{config.pk}")
        n_workers = int(os.environ.get("BENCH_WORKERS", "4"))
        threads = int(os.environ.get("BENCH_THREADS", "6"))
        env = {**os.environ, **ENV}
        for n in range(n_workers):
            workers.append(subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "threads", "--concurrency",
                 str(threads), "-Q", "bench-judge,bench-judge-llm", "-n", f"bench{n}@%h", "--loglevel", "WARNING",
                 "--without-mingle", "--without-gossip"], cwd=BASE_DIR, env=env))
        deadline = time.monotonic() + 60
        while len(app.control.ping(timeout=0.5)) < n_workers and time.monotonic() < deadline:
            pass
        time.sleep(1.0)
        run = judging.create_run(config, corpus, item_codes=ITEMS)
        t0, t0_wall = time.monotonic(), time.time()
        judging.start(run)
        sent = time.monotonic() - t0
        wait_run(run.pk, 600)
        wall = time.monotonic() - t0  # includes start(): building and sending the 2,000 tasks
        stats = fetch_stats(fake.base_url)
        run.refresh_from_db()
        progress = judging.progress(run)
        verdict = "PASS" if wall <= IDEAL * 1.1 else "FAIL"
        print(f"first run: {progress['total']} units, {stats['requests']} calls, status {progress['status']}, "
              f"peak concurrency {stats['max_concurrency']} (limit {CONCURRENCY})")
        print(f"FIRST RUN: {wall:.2f} s (ideal {IDEAL:.1f} s, target <= {IDEAL * 1.1:.2f} s) {verdict}; "
              f"{workers.__len__()} worker(s) x {threads} threads; start() queued the units in {sent:.2f} s")
        records = [r for r in fetch_requests(fake.base_url) if r["answered"] and r["path"].endswith("completions")]
        span = max(r["answered"] for r in records) - min(r["received"] for r in records)
        service = [r["answered"] - r["received"] for r in records]
        print(f"endpoint view: first request {min(r['received'] for r in records) - t0_wall:.2f} s after start(), "
              f"mean answer time {1000 * sum(service) / len(service):.0f} ms, mean requests in flight "
              f"{sum(service) / span:.2f} of {CONCURRENCY} over {span:.2f} s")
        ticks = os.sysconf("SC_CLK_TCK")

        def cpu(pid: int) -> float:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / ticks

        print("CPU seconds: workers " + ", ".join(f"{cpu(w.pid):.1f}" for w in workers)
              + f"; fake endpoint {cpu(fake.pid):.1f}")
        before = stats["requests"]
        rerun = judging.create_run(config, corpus, item_codes=ITEMS)
        t0 = time.monotonic()
        judging.start(rerun)
        wait_run(rerun.pk, 600)
        wall2 = time.monotonic() - t0
        calls2 = fetch_stats(fake.base_url)["requests"] - before
        verdict2 = "PASS" if wall2 < 10 and calls2 == 0 else "FAIL"
        print(f"RE-RUN: {wall2:.2f} s, {calls2} calls (target: 0 calls, < 10 s) {verdict2}; "
              f"cached {judging.progress(rerun)['cached']}")
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            try:
                worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                worker.kill()
        fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
