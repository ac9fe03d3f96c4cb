"""The limiter shared by every LLM worker process: the concurrency slots of an endpoint are never over-given when
several processes take and give them back at once (the file-backed store of the embedded mode, Redis in production).

A judge run on the embedded mode's files, with ``--pool prefork --concurrency 2``, once had 32 requests in flight
against a limit of 16: the state file was written back after its lock was released, so another process could read
it half-written (empty) and take every slot again."""

from __future__ import annotations

import multiprocessing
import os
import time
import uuid

from scoring.llm import limiter

LIMIT, PROCESSES, ROUNDS = 3, 4, 250


def _hammer(name: str, held, peak, lock, errors) -> None:
    limiter._redis_clients.clear()  # a forked child opens its own Redis connection
    try:
        for _ in range(ROUNDS):
            tokens = limiter.acquire_many(name, LIMIT, 2, 30, f"test-proc-{os.getpid()}")
            if not tokens:
                continue
            with lock:  # counted after the slots are taken ...
                held.value += len(tokens)
                peak.value = max(peak.value, held.value)
            time.sleep(0.0005)
            with lock:  # ... and uncounted before they go back: the count never exceeds what the store gave out
                held.value -= len(tokens)
            limiter.release_many(name, tokens)
    except Exception as exc:  # pragma: no cover - shown by the assertion below
        errors.put(repr(exc))


def test_slots_are_never_over_given_across_processes(settings, tmp_path):
    settings.VAR_DIR = tmp_path  # the embedded mode's state files (production: Redis, as configured)
    name = f"test-endpoint-{uuid.uuid4().hex[:8]}"
    context = multiprocessing.get_context("fork")
    held, peak, lock, errors = context.Value("i", 0), context.Value("i", 0), context.Lock(), context.Queue()
    workers = [context.Process(target=_hammer, args=(name, held, peak, lock, errors)) for _ in range(PROCESSES)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert all(worker.exitcode == 0 for worker in workers)
    assert errors.empty(), errors.get()
    assert 2 <= peak.value <= LIMIT, f"{peak.value} slots held at once, limit {LIMIT}"
    assert limiter.in_use(name) == 0
    limiter.reset(name)
