"""The embedded mode's file cache: ``add`` is atomic across processes, as on Redis."""

from __future__ import annotations

import multiprocessing
import time

from config.cache import FileCache


def _race(directory: str, key: str, barrier, results) -> None:
    cache = FileCache(directory, {})
    barrier.wait()
    results.put(cache.add(key, 1, timeout=30))


def test_add_refuses_a_live_entry_and_takes_an_expired_one(tmp_path):
    cache = FileCache(str(tmp_path), {})
    assert cache.add("k", "first", timeout=30) is True
    assert cache.add("k", "second", timeout=30) is False and cache.get("k") == "first"
    assert cache.add("short", "old", timeout=0.2) is True
    time.sleep(0.3)
    assert cache.add("short", "new", timeout=30) is True and cache.get("short") == "new"
    assert not [p for p in tmp_path.iterdir() if not p.name.endswith(".djcache")]  # no temporary file left


def test_only_one_of_many_processes_adds_the_same_key(tmp_path):
    context = multiprocessing.get_context("fork")
    for round_ in range(10):
        barrier, results = context.Barrier(6), context.Queue()
        procs = [context.Process(target=_race, args=(str(tmp_path), f"key-{round_}", barrier, results))
                 for _ in range(6)]
        for proc in procs:
            proc.start()
        outcomes = [results.get(timeout=30) for _ in procs]
        for proc in procs:
            proc.join(timeout=30)
        assert outcomes.count(True) == 1, (round_, outcomes)
