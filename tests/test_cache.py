"""The cache backends (config.cache): the embedded mode's file cache, whose ``add`` is atomic across processes as on
Redis, and production's Redis cache, which keeps its redis-py client."""

from __future__ import annotations

import multiprocessing
import time

import pytest
from django.conf import settings
from django.core.cache import cache

from config.cache import FileCache, RedisCache


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


def test_the_redis_cache_builds_one_client_per_connection_pool_not_one_per_operation():
    """Building a redis-py client takes 0.05 ms of CPU (its response callbacks), half as much again as a get; Django's
    client built one for every get and set. No connection is made here: the test runs in both modes."""
    backend = RedisCache("redis://127.0.0.1:1/0;redis://127.0.0.1:2/0", {})  # a writer and a reader
    client = backend._cache
    writer = client.get_client("k", write=True)
    assert client.get_client("k", write=True) is writer
    assert writer.connection_pool is client._get_connection_pool(True)
    reader = client.get_client("k")
    assert client.get_client("other") is reader and reader.connection_pool is client._get_connection_pool(False)
    assert reader is not writer


@pytest.mark.skipif(not settings.CACHES["default"]["BACKEND"].endswith("RedisCache"),
                    reason="embedded mode: the file cache")
def test_production_caches_through_the_kept_client():
    cache.set("kept-client", {"n": 1}, 30)
    assert cache.get("kept-client") == {"n": 1}
    assert cache.add("kept-client", 2) is False
    assert cache.get_many(["kept-client", "absent"]) == {"kept-client": {"n": 1}}
    assert cache._cache.get_client() is cache._cache.get_client()
