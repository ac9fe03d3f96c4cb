"""Benchmark: GET /healthz with a worker running (it once took 3.0 s per call).

Target: after the first call of a process, every call answers in under 0.1 s (the worker ping is reused from the
cache while fresh and refreshed in the background), and the answer stays 200 throughout.

What it does:
  1. Production mode (default): PostgreSQL (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/
     minicex_bench_health, created and migrated if missing) and Redis (broker redis://127.0.0.1:6379/5, cache db 6).
     ``--embedded``: SQLite and the filesystem broker in a temporary directory (its workers read control messages
     once a second, the slow case).
  2. Starts one Celery worker (solo pool, its own queue) and waits until it answers a ping.
  3. Times one plain worker ping (what every call cost before), then ``--calls`` GET /healthz through Django's test
     client, one every ``--interval`` seconds (a load balancer's rhythm), and prints the first call, the median,
     p95 and the slowest of the others, and how many answered 200.

Run:  .venv/bin/python bench/bench_health.py [--embedded] [--calls 60] [--interval 0.25]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
TARGET = 0.1


def configure(embedded: bool) -> None:
    os.environ.setdefault("SECRET_KEY", "bench-health-not-secret")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("CELERY_TASK_DEFAULT_QUEUE", "bench-health")
    os.environ.setdefault("CELERY_LLM_QUEUE", "bench-health-llm")
    if embedded:
        for name in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL"):
            os.environ.pop(name, None)
        os.environ["MINICEX_VAR_DIR"] = tempfile.mkdtemp(prefix="bench-health-")
    else:
        os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/minicex_bench_health")
        os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/5")
        os.environ.setdefault("CACHE_URL", "redis://127.0.0.1:6379/6")
        os.environ.setdefault("EMAIL_BACKEND", "console")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedded", action="store_true", help="SQLite and the filesystem broker")
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--interval", type=float, default=0.25)
    args = parser.parse_args()
    configure(args.embedded)
    if not args.embedded:
        from bench.machine import ensure_postgres_database

        ensure_postgres_database(os.environ["DATABASE_URL"])
    import django

    django.setup()
    from django.core.cache import cache
    from django.core.management import call_command
    from django.test import Client

    from bench.machine import calibration_line
    from core.site import health

    print(calibration_line(), flush=True)
    call_command("migrate", interactive=False, verbosity=0)
    cache.delete(health._WORKERS_KEY)
    worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo",
                               "--queues", os.environ["CELERY_TASK_DEFAULT_QUEUE"], "--hostname",
                               f"bench-health-{os.getpid()}@%h", "--loglevel", "WARNING"], cwd=BASE_DIR,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not health.ping_workers(1.0)["ok"]:
            if time.monotonic() > deadline:
                print("the worker did not answer within 60 s")
                return 1
        started = time.perf_counter()
        ping = health.ping_workers()
        print(f"one worker ping (every call's cost before): {time.perf_counter() - started:.2f} s "
              f"({ping['count']} worker(s) answered)")
        cache.delete(health._WORKERS_KEY)
        client = Client(HTTP_HOST="127.0.0.1")
        times, statuses = [], []
        for _ in range(args.calls):
            started = time.perf_counter()
            statuses.append(client.get("/healthz").status_code)
            times.append(time.perf_counter() - started)
            time.sleep(args.interval)
        rest = sorted(times[1:])
        p95 = rest[max(0, int(len(rest) * 0.95) - 1)]
        mode = "embedded (SQLite, filesystem broker)" if args.embedded else "production (PostgreSQL, Redis)"
        print(f"/healthz, {mode}, {args.calls} calls {args.interval:g} s apart: first {times[0]:.3f} s; others "
              f"median {statistics.median(rest) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms, slowest "
              f"{rest[-1] * 1000:.1f} ms; {statuses.count(200)} of {len(statuses)} answered 200")
        ok = rest[-1] < TARGET and statuses.count(200) == len(statuses)
        print(f"target: every call after the first under {TARGET * 1000:.0f} ms, all 200: "
              f"{'met' if ok else 'NOT met'}")
        return 0 if ok else 1
    finally:
        worker.terminate()
        worker.wait(20)


if __name__ == "__main__":
    sys.exit(main())
