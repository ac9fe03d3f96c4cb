"""Benchmark: judge runs against the fake OpenAI-compatible endpoint, on the README's standard workers.

Cases (each figure is printed beside its target):

1. 2,000 per-item calls at 300 ms latency, concurrency 16: ideal 2,000 x 0.3 / 16 = 37.5 s; target within 5%.
2. Study scale: 2,001 per-item calls (87 dialogues x 23 items) at 1 s latency, concurrency 256: ideal 7.8 s; target
   within 25% (9.8 s) with at most 40 database connections; the LLM worker's CPU per call (target <= 5 ms).
3. A re-run of case 1: zero calls, under 10 s.
4. Creating and queueing a run of 250,000 units (10,870 dialogues x 23 items): target under 30 s.
5. Case 2 from the command line (``manage.py run_judge ... --wait``, a new process, the workers already running):
   the time from the command's start to its first request (target <= 2 s), its first answer, and to the run's end
   (target within 1.25 x the ideal 7.8 s after the first request; from the command: the start-up added).

Setup, production mode (the default): PostgreSQL (BENCH_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/minicex_bench_judge, recreated), Redis broker and limiter
(redis://127.0.0.1:6379/4), the fake server in its own process, and the two workers of the README's production
layout: ``--queues <default> --concurrency 4`` and ``--queues <llm> --pool prefork --concurrency 2``.

Embedded mode (``--embedded``): what ``make run`` gives a new user, SQLite and the filesystem broker under
``var/bench-judge/`` (recreated) and ``make run``'s two workers: the default queue with Celery's default pool and the
LLM queue on ``--pool threads --concurrency 16``. There is no database-connection count to take (SQLite).

Run:  .venv/bin/python bench/bench_judge.py  [--embedded] [--skip-create] [--command-only]
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
DATABASE_URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/minicex_bench_judge")
ENV = {
    "DATABASE_URL": DATABASE_URL, "CELERY_BROKER_URL": "redis://127.0.0.1:6379/4", "SECRET_KEY": "bench-judge",
    "DJANGO_SETTINGS_MODULE": "config.settings", "LOG_LEVEL": "WARNING", "LLM_KEY_BENCH_JUDGE": "sk-bench",
    "CELERY_TASK_DEFAULT_QUEUE": "bench-judge", "CELERY_LLM_QUEUE": "bench-judge-llm", "DEBUG": "0",
}
EMBEDDED = "--embedded" in sys.argv
if EMBEDDED:
    import shutil

    VAR_DIR = BASE_DIR / "var" / "bench-judge"
    shutil.rmtree(VAR_DIR, ignore_errors=True)
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL"):
        ENV.pop(name, None)
        os.environ.pop(name, None)
    ENV["MINICEX_VAR_DIR"] = str(VAR_DIR)
os.environ.update(ENV)
ALL_ITEMS = ["1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.7", "1.8", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "2.7",
             "2.8", "3.1", "3.2", "3.3", "3.4", "3.5", "3.6", "3.7"]
TICKS = os.sysconf("SC_CLK_TCK")
# The LLM worker's pool as in the README's production layout (BENCH_LLM_POOL=threads:16 to compare).
LLM_POOL = os.environ.get("BENCH_LLM_POOL", "threads:16" if EMBEDDED else "prefork:2").split(":")


def cpu(pid: int) -> float:
    """CPU seconds of a process and its children (a prefork worker's engines run in its children)."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if stat.parent.name == str(pid) or fields[1] == str(pid):
            total += (int(fields[11]) + int(fields[12])) / TICKS
    return total


def wait_run(run_id: int, timeout: float) -> float:
    from scoring.judges.models import JudgeRun

    started = time.monotonic()
    while time.monotonic() - started < timeout:
        status = JudgeRun.objects.filter(pk=run_id).values_list("status", flat=True).first()
        if status not in ("queued", "running"):
            return time.monotonic() - started
        time.sleep(0.05)
    raise RuntimeError("run did not finish in time")


class ConnectionSampler(threading.Thread):
    """Peak number of connections to the benchmark database (every 100 ms), other than this sampler's own."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = 0
        self.stop = threading.Event()

    def run(self) -> None:
        if EMBEDDED:
            return  # SQLite: no server, no connections to count
        import psycopg

        name = urlsplit(DATABASE_URL).path.lstrip("/")
        with psycopg.connect(DATABASE_URL, autocommit=True) as conn:
            while not self.stop.wait(0.1):
                count = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [name]).fetchone()[0]
                self.peak = max(self.peak, count - 1)


def corpus_of(name: str, n: int, turns: int = 12):
    from annotation.models import Corpus, Dialogue

    corpus = Corpus.objects.create(name=name)
    for start in range(0, n, 2000):
        Dialogue.objects.bulk_create([Dialogue(
            corpus=corpus, external_id=f"{name}-{i:05d}", self_report=f"Cough for {i % 9 + 1} days.",
            source_model="m", turns=[{"role": "doctor" if t % 2 == 0 else "patient",
                                      "text": f"Turn {t} of dialogue {i}: " + "word " * 20} for t in range(turns)])
            for i in range(start, min(n, start + 2000))])
    return corpus


def start_workers(env: dict) -> list[subprocess.Popen]:
    """The README's production layout: one worker for the default queue, one threads-pool worker for LLM calls."""
    common = [sys.executable, "-m", "celery", "-A", "config", "worker", "--loglevel", "WARNING", "--without-mingle",
              "--without-gossip"]
    default = [] if EMBEDDED else ["--concurrency", "4"]  # make run: Celery's default (a process per core)
    return [subprocess.Popen([*common, "-Q", "bench-judge", *default, "-n", "default@%h"], cwd=BASE_DIR, env=env),
            subprocess.Popen([*common, "-Q", "bench-judge-llm", "--pool", LLM_POOL[0], "--concurrency", LLM_POOL[1],
                              "-n", "llm@%h"], cwd=BASE_DIR, env=env,
                             stderr=open(os.environ["BENCH_WORKER_LOG"], "w") if os.environ.get("BENCH_WORKER_LOG")  # noqa: SIM115
                             else None)]


def run_case(label: str, config, corpus, items: list[str], calls: int, latency: float, concurrency: int, fake,
             llm_worker: subprocess.Popen, target: float) -> tuple[bool, object]:
    from scoring.judges import runs as judging
    from tests.fake_openai import fetch_requests, fetch_stats

    fake.control(latency=latency, reset=True)
    profiler = None
    if os.environ.get("BENCH_PROFILE"):  # py-spy samples the LLM worker (pip install py-spy)
        profiler = subprocess.Popen(["py-spy", "record", "-p", str(llm_worker.pid), "-o",
                                     f"{os.environ['BENCH_PROFILE']}-{concurrency}.txt", "--format", "raw",
                                     "--threads", "--gil", "-r", "200"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    before_cpu, before_fake = cpu(llm_worker.pid), cpu(fake.pid)
    sampler = ConnectionSampler()
    sampler.start()
    run = judging.create_run(config, corpus, item_codes=items)
    t0, t0_wall = time.monotonic(), time.time()
    judging.start(run)
    if os.environ.get("BENCH_TIMELINE"):
        print(f"  start() called at {time.strftime('%H:%M:%S', time.localtime(t0_wall))}.{int(t0_wall % 1 * 1000):03d},"
              f" returned after {1000 * (time.monotonic() - t0):.0f} ms")
    wait_run(run.pk, 900)
    wall = time.monotonic() - t0  # from start(), which wakes the workers
    sampler.stop.set()
    worker_cpu, fake_cpu = cpu(llm_worker.pid) - before_cpu, cpu(fake.pid) - before_fake
    if profiler is not None:
        profiler.send_signal(2)
        profiler.wait(30)
    run.refresh_from_db()
    stats = fetch_stats(fake.base_url)
    progress = judging.progress(run)
    ideal = calls * latency / concurrency
    ok = wall <= target and stats["requests"] == calls and progress["status"] == "succeeded"
    print(f"{label}: {wall:.2f} s for {stats['requests']} calls (ideal {ideal:.2f} s, target <= {target:.2f} s) "
          f"{'PASS' if ok else 'FAIL'}; status {progress['status']}, peak concurrency {stats['max_concurrency']} "
          f"(limit {concurrency})")
    records = [r for r in fetch_requests(fake.base_url) if r["answered"] and r["path"].endswith("completions")]
    if records:
        first = min(r["received"] for r in records)
        span = max(r["answered"] for r in records) - first
        service = [r["answered"] - r["received"] for r in records]
        print(f"  endpoint view: first request {first - t0_wall:.2f} s after start(), mean answer time "
              f"{1000 * sum(service) / len(service):.0f} ms, mean requests in flight {sum(service) / span:.1f} of "
              f"{concurrency} over {span:.2f} s; the fake endpoint used {fake_cpu:.1f} s of CPU")
        if os.environ.get("BENCH_TIMELINE"):
            buckets = {}
            for r in records:
                b = int((r["received"] - first) * 2)
                buckets[b] = buckets.get(b, 0) + 1
            print("  requests received per 0.5 s: " + " ".join(str(buckets.get(b, 0)) for b in range(max(buckets) + 1)))
    if stats["requests"] != calls:  # where the extra (or missing) requests came from
        chats = [r for r in fetch_requests(fake.base_url) if r["path"].endswith("completions")]
        seen: dict[str, list[dict]] = {}
        for r in chats:
            seen.setdefault(r["body_hash"], []).append(r)
        repeated = {h: rs for h, rs in seen.items() if len(rs) > 1}
        statuses: dict[str, int] = {}
        for r in chats:
            statuses[str(r["status"])] = statuses.get(str(r["status"]), 0) + 1
        print(f"  {len(chats)} requests for {len(seen)} distinct prompts; answers by status {statuses}")
        for rs in list(repeated.values())[:5]:
            print("  sent again: " + ", ".join(f"at {r['received'] - t0_wall:.2f} s ({r['status']})" for r in rs))
    per_call = 1000 * worker_cpu / max(1, stats["requests"])
    connections = ("no database connections to count (SQLite)" if EMBEDDED else
                   f"peak database connections {sampler.peak} (target <= 40) "
                   f"{'PASS' if sampler.peak <= 40 else 'FAIL'}")
    print(f"  LLM worker CPU: {worker_cpu:.2f} s = {per_call:.2f} ms per call (target <= 5 ms) "
          f"{'PASS' if per_call <= 5 else 'FAIL'}; {connections}")
    return ok and per_call <= 5 and sampler.peak <= 40, run


def command_case(fake, concurrency: int = 256, latency: float = 1.0) -> bool:
    """Case 5: ``run_judge --wait`` in a process of its own, as a coordinator types it."""
    from tests.fake_openai import fetch_requests

    name = f"bench-command-{int(time.time())}"
    corpus_of(name, 87)
    fake.control(latency=latency, reset=True)
    profile = ["-m", "cProfile", "-o", os.environ["BENCH_PROFILE_COMMAND"]] if os.environ.get(
        "BENCH_PROFILE_COMMAND") else []  # where the command's time goes (python -m pstats FILE)
    command = [sys.executable, *profile, "manage.py", "run_judge", "--project", "Bench judge", "--corpus", name,
               "--model", name, "--items", ",".join(ALL_ITEMS), "--base-url", fake.base_url,
               "--api-key-env", "LLM_KEY_BENCH_JUDGE", "--concurrency", str(concurrency), "--wait"]
    started = time.time()
    done = subprocess.run(command, cwd=BASE_DIR, env={**os.environ, **ENV}, capture_output=True, text=True)
    ended = time.time()
    records = [r for r in fetch_requests(fake.base_url) if r["path"].endswith("completions")]
    if done.returncode or not records:
        print(f"CASE 5 (run_judge --wait) FAILED: exit {done.returncode}\n{done.stderr[-2000:]}")
        return False
    from scoring.judges.models import JudgeRun

    run = JudgeRun.objects.filter(config__model=name).get()
    run_started = run.started_at.timestamp() - started  # the command's own start-up
    first = min(r["received"] for r in records) - started
    answer = min(r["answered"] for r in records if r["answered"]) - started
    last = max(r["answered"] for r in records if r["answered"]) - started
    ideal = len(records) * latency / concurrency
    ok = first <= 2.0 and last - first <= ideal * 1.25
    print(f"CASE 5 (run_judge --wait, {len(records)} calls, {latency:g} s, concurrency {concurrency}): run started "
          f"{run_started:.2f} s and first request {first:.2f} s after the command started (target <= 2 s), "
          f"first answer {answer:.2f} s, last answer "
          f"{last:.2f} s ({last - first:.2f} s after the first request; ideal {ideal:.2f} s, target <= "
          f"{ideal * 1.25:.2f} s), the command ended after {ended - started:.2f} s {'PASS' if ok else 'FAIL'}")
    return ok


def main() -> int:
    from bench.machine import calibration_line

    print(calibration_line())
    if EMBEDDED:
        print(f"embedded mode: SQLite and the filesystem broker under {VAR_DIR}, LLM worker pool {':'.join(LLM_POOL)}")
    else:
        from bench.machine import ensure_postgres_database

        ensure_postgres_database(DATABASE_URL, fresh=True)
        print(f"production mode: PostgreSQL and Redis, LLM worker pool {':'.join(LLM_POOL)}")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from bench.machine import enter_project

    enter_project("Bench judge")  # corpora, judges and runs are the benchmark project's
    from annotation.models import ScaleVersion
    from config.celery import app
    from scoring.judges import runs as judging
    from scoring.judges.models import JudgeConfig, JudgeResult
    from scoring.llm import limiter
    from tests.fake_openai import FakeOpenAIProcess, fetch_stats

    with app.connection_for_write() as conn:
        for queue in ("bench-judge", "bench-judge-llm"):
            with contextlib.suppress(Exception):  # the queue may not exist yet
                conn.default_channel.queue_purge(queue)
    prompt_set = judging.default_prompt_set(ScaleVersion.objects.get(number=1))
    fake = FakeOpenAIProcess(latency=0.3, extra_args=("--mini-cex",)).start()
    workers = start_workers({**os.environ, **ENV})
    results = []
    try:
        deadline = time.monotonic() + 60
        while len(app.control.ping(timeout=0.5)) < 2 and time.monotonic() < deadline:
            pass
        time.sleep(1.0)
        if "--command-only" in sys.argv:
            results.append(command_case(fake))
            return 0 if all(results) else 1
        # 1. 2,000 calls, 300 ms, concurrency 16
        config = JudgeConfig.objects.create(name="bench-16", base_url=fake.base_url, api_key_env="LLM_KEY_BENCH_JUDGE",
                                            model="fake-judge", concurrency=16, timeout_seconds=10,
                                            prompt_set=prompt_set)
        limiter.reset("endpoint-")
        items8 = ALL_ITEMS[:8]
        corpus = corpus_of("bench-2000", 250)
        ok, _ = run_case("CASE 1 (2,000 calls, 300 ms, concurrency 16)", config, corpus, items8, 2000, 0.3, 16, fake,
                         workers[1], target=2000 * 0.3 / 16 * 1.05)
        results.append(ok)
        # 3. the re-run: zero calls
        before = fetch_stats(fake.base_url)["requests"]
        rerun = judging.create_run(config, corpus, item_codes=items8)
        t0 = time.monotonic()
        judging.start(rerun)
        wait_run(rerun.pk, 600)
        wall = time.monotonic() - t0
        calls = fetch_stats(fake.base_url)["requests"] - before
        ok = wall < 10 and calls == 0
        results.append(ok)
        print(f"RE-RUN of case 1: {wall:.2f} s, {calls} calls (target: 0 calls, < 10 s) {'PASS' if ok else 'FAIL'}; "
              f"cached {judging.progress(rerun)['cached']}")
        # 2. study scale: 2,001 calls, 1 s, concurrency 256
        config256 = JudgeConfig.objects.create(name="bench-256", base_url=fake.base_url,
                                               api_key_env="LLM_KEY_BENCH_JUDGE", model="fake-judge-256",
                                               concurrency=256, timeout_seconds=30, prompt_set=prompt_set)
        limiter.reset("endpoint-")
        corpus87 = corpus_of("bench-scale", 87)
        ok, _ = run_case("CASE 2 (2,001 calls, 1 s, concurrency 256)", config256, corpus87, ALL_ITEMS, 2001, 1.0, 256,
                         fake, workers[1], target=2001 / 256 * 1.25)
        results.append(ok)
        # 5. the same from the command line
        results.append(command_case(fake))
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            try:
                worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                worker.kill()
        fake.stop()
    if "--skip-create" not in sys.argv:
        # 4. create and queue 250,000 units (no worker needed: start() only wakes the workers)
        big = corpus_of("bench-250k", 10_870, turns=4)
        t0 = time.monotonic()
        run = judging.create_run(config, big, item_codes=ALL_ITEMS)
        created = time.monotonic() - t0
        judging.start(run)
        total = time.monotonic() - t0
        units = JudgeResult.objects.filter(run=run).count()
        ok = total < 30 and units == 250_010
        results.append(ok)
        print(f"CREATE AND QUEUE {units} units: {total:.2f} s (created in {created:.2f} s; target < 30 s) "
              f"{'PASS' if ok else 'FAIL'}")
    print("ALL PASS" if all(results) else "SOME TARGETS MISSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
