"""Concurrency and rate limits shared by every worker.

With Redis (production, or whenever ``LIMITER_URL``/a Redis broker is configured) the limits are a leased
semaphore (a sorted set; a dead worker's leases expire) and token buckets, both updated atomically in Lua.
Without Redis (the embedded mode, one machine) they are file locks under ``var/limits``: a slot is an exclusive
``flock`` on one of N files, released by the kernel if the process dies.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

_ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
  redis.call('EXPIRE', KEYS[1], 3600)
  return 1
end
return 0
"""
_BUCKET = """
local rate = tonumber(ARGV[2])
local capacity = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local now = tonumber(ARGV[1])
local tokens = tonumber(redis.call('HGET', KEYS[1], 'tokens') or capacity)
local ts = tonumber(redis.call('HGET', KEYS[1], 'ts') or now)
tokens = math.min(capacity, tokens + math.max(0, now - ts) * rate)
local wait = 0
if tokens >= cost then tokens = tokens - cost else wait = (cost - tokens) / rate end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
redis.call('EXPIRE', KEYS[1], 3600)
return tostring(wait)
"""


@dataclass
class Slot:
    key: str
    token: str
    fd: int | None = None


def limiter_url() -> str | None:
    url = getattr(settings, "LIMITER_URL", "") or ""
    if url:
        return url
    broker = settings.CELERY_BROKER_URL or ""
    return broker if broker.startswith(("redis://", "rediss://")) else None


_redis_clients: dict[str, object] = {}


def _redis():
    import redis

    url = limiter_url()
    client = _redis_clients.get(url)
    if client is None:
        client = redis.Redis.from_url(url)
        _redis_clients[url] = client
    return client


def _dir() -> Path:
    path = Path(settings.VAR_DIR) / "limits"
    path.mkdir(parents=True, exist_ok=True)
    return path


def acquire(name: str, limit: int, lease_seconds: float) -> Slot | None:
    """Take one of ``limit`` slots for ``name`` or return None when all are taken."""
    limit = max(1, int(limit))
    if limiter_url():
        token = uuid.uuid4().hex
        now = time.time()
        ok = _redis().eval(_ACQUIRE, 1, f"minicex:sem:{name}", now, now + lease_seconds, limit, token)
        return Slot(key=name, token=token) if ok else None
    for index in range(limit):
        fd = os.open(_dir() / f"{name}.{index}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return Slot(key=name, token=str(index), fd=fd)
    return None


def acquire_waiting(name: str, limit: int, lease_seconds: float, wait_seconds: float) -> Slot | None:
    """``acquire``, polling for up to ``wait_seconds``: a worker with more threads than slots waits a moment for
    a free slot instead of sending the task round the broker again."""
    import random

    deadline = time.monotonic() + wait_seconds
    while True:
        slot = acquire(name, limit, lease_seconds)
        remaining = deadline - time.monotonic()
        if slot is not None or remaining <= 0:
            return slot
        if limiter_url():
            # Block (without polling) until a release wakes one waiter; the timeout covers leases that expire
            # because their holder died, and wake-ups nobody was waiting for (then the acquire above just fails).
            _redis().blpop([f"minicex:wake:{name}"], timeout=min(remaining, 0.25))
        else:
            time.sleep(random.uniform(0.01, 0.03))


def release(slot: Slot | None) -> None:
    if slot is None:
        return
    if slot.fd is not None:
        fcntl.flock(slot.fd, fcntl.LOCK_UN)
        os.close(slot.fd)
        return
    wake = f"minicex:wake:{slot.key}"
    pipe = _redis().pipeline(transaction=False)
    pipe.zrem(f"minicex:sem:{slot.key}", slot.token)
    pipe.lpush(wake, 1)
    pipe.ltrim(wake, 0, 63)  # unclaimed wake-ups must not pile up
    pipe.expire(wake, 3600)
    pipe.execute()


def take(name: str, per_minute: int | None, amount: float = 1.0) -> float:
    """Token bucket: take ``amount`` (one request, or an estimate of tokens) from a budget of ``per_minute``.
    Returns 0 when allowed now, else the seconds to wait (nothing is taken then)."""
    if not per_minute:
        return 0.0
    rate = per_minute / 60.0
    capacity = float(per_minute)
    amount = min(float(amount), capacity)
    if limiter_url():
        return float(_redis().eval(_BUCKET, 1, f"minicex:bucket:{name}", time.time(), rate, capacity, amount))
    lock_path = _dir() / f"{name}.bucket"
    with open(lock_path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        try:
            state = json.loads(handle.read() or "{}")
        except json.JSONDecodeError:
            state = {}
        now = time.time()
        elapsed = max(0.0, now - float(state.get("ts", now)))
        tokens = min(capacity, float(state.get("tokens", capacity)) + elapsed * rate)
        wait = 0.0
        if tokens >= amount:
            tokens -= amount
        else:
            wait = (amount - tokens) / rate
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"tokens": tokens, "ts": now}))
        fcntl.flock(handle, fcntl.LOCK_UN)
    return wait


def reset(name: str) -> None:
    """Forget every limit state whose name starts with ``name`` (tests and benchmarks)."""
    if limiter_url():
        client = _redis()
        for kind in ("sem", "bucket", "wake"):
            for key in client.scan_iter(match=f"minicex:{kind}:{name}*"):
                client.delete(key)
        return
    for path in _dir().glob(f"{name}*"):
        path.unlink(missing_ok=True)
