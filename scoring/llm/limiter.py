"""Concurrency and rate limits shared by every worker, and in-flight reservations of request keys.

* **Slots** (a leased semaphore per limit name): a request holds one slot while it is in flight. Slots are taken
  and given back in batches. Each slot names the engine holding it, so the slots of a dead engine are freed at
  once (:func:`purge_owner`, with its reservations), and every slot has a lease (longer than a request can take)
  as a last resort.
* **Buckets** (requests or tokens per minute): token buckets from which a batch of requests takes what it may.
* **Reservations**: the request keys being sent right now, so two engines never pay for the same request at once.

With Redis (production, or whenever ``LIMITER_URL``/a Redis broker is configured) the state lives in Redis and is
updated atomically in Lua. Without Redis (the embedded mode, one machine) it lives in small JSON files under
``var/limits``, each updated under an exclusive ``flock``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import math
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

from django.conf import settings

_ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local free = tonumber(ARGV[3]) - redis.call('ZCARD', KEYS[1])
local n = math.min(free, tonumber(ARGV[4]))
if n <= 0 then return 0 end
for i = 1, n do
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[5] .. i)
end
redis.call('EXPIRE', KEYS[1], 3600)
return n
"""
_PURGE = """
local removed = 0
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if string.sub(member, 1, string.len(ARGV[1])) == ARGV[1] then
    redis.call('ZREM', KEYS[1], member)
    removed = removed + 1
  end
end
return removed
"""
_UNRESERVE_OWNER = """
local removed = 0
for _, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then
    redis.call('DEL', key)
    removed = removed + 1
  end
end
return removed
"""
_BUCKET = """
local rate = tonumber(ARGV[2])
local capacity = tonumber(ARGV[3])
local each = tonumber(ARGV[4])
local want = tonumber(ARGV[5])
local now = tonumber(ARGV[1])
local tokens = tonumber(redis.call('HGET', KEYS[1], 'tokens') or capacity)
local ts = tonumber(redis.call('HGET', KEYS[1], 'ts') or now)
tokens = math.min(capacity, tokens + math.max(0, now - ts) * rate)
local n = math.min(want, math.floor(tokens / each))
local wait = 0
if n > 0 then tokens = tokens - n * each else wait = (each - tokens) / rate end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
redis.call('EXPIRE', KEYS[1], 3600)
return {n, tostring(wait)}
"""


class LimiterUnavailable(Exception):
    """The limiter's store (Redis) cannot be reached; callers wait and try again."""


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
        client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=2, health_check_interval=15)
        _redis_clients[url] = client
    return client


@contextlib.contextmanager
def _redis_errors() -> Iterator[None]:
    import redis

    try:
        yield
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        raise LimiterUnavailable(f"the limiter's Redis cannot be reached: {exc}") from exc


def _dir() -> Path:
    path = Path(settings.VAR_DIR) / "limits"
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def _locked_state(name: str) -> Iterator[dict]:
    """A JSON state file, read and written back under an exclusive lock (the embedded mode)."""
    safe = hashlib.sha1(name.encode()).hexdigest()[:16] if len(name) > 100 or "/" in name else name
    with open(_dir() / f"{safe}.json", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.seek(0)
            try:
                state = json.loads(handle.read() or "{}")
            except json.JSONDecodeError:
                state = {}
            yield state
            handle.seek(0)
            handle.truncate()
            handle.write(json.dumps(state))
            # Written through before the lock goes: a buffered write would reach the file when it is closed, after
            # the unlock, and another process would read it empty (every slot free) in between.
            handle.flush()
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# ---------------------------------------------------------------------------------------------------------------
# slots
# ---------------------------------------------------------------------------------------------------------------
def acquire_many(name: str, limit: int, want: int, lease_seconds: float, owner: str) -> list[str]:
    """Take up to ``want`` of the ``limit`` slots of ``name`` for ``owner``; returns the slot tokens taken."""
    limit, want = max(1, int(limit)), int(want)
    if want <= 0:
        return []
    prefix = f"{owner}|{uuid.uuid4().hex[:12]}|"
    now = time.time()
    if limiter_url():
        with _redis_errors():
            n = int(_redis().eval(_ACQUIRE, 1, f"minicex:sem:{name}", now, now + lease_seconds, limit, want, prefix))
        return [f"{prefix}{i}" for i in range(1, n + 1)]
    with _locked_state(f"sem-{name}") as state:
        for member, expiry in list(state.items()):
            if expiry < now:
                del state[member]
        n = max(0, min(want, limit - len(state)))
        tokens = [f"{prefix}{i}" for i in range(1, n + 1)]
        state.update({token: now + lease_seconds for token in tokens})
    return tokens


def release_many(name: str, tokens: Iterable[str]) -> None:
    tokens = list(tokens)
    if not tokens:
        return
    if limiter_url():
        with _redis_errors():
            _redis().zrem(f"minicex:sem:{name}", *tokens)
        return
    with _locked_state(f"sem-{name}") as state:
        for token in tokens:
            state.pop(token, None)


def give_back(slots: dict[str, list[str]], keys: Iterable[str]) -> None:
    """``release_many`` for several limits and ``unreserve`` in one round trip (Redis)."""
    keys = list(keys)
    if not limiter_url():
        for name, tokens in slots.items():
            release_many(name, tokens)
        unreserve(keys)
        return
    with _redis_errors():
        pipe = _redis().pipeline(transaction=False)
        for name, tokens in slots.items():
            if tokens:
                pipe.zrem(f"minicex:sem:{name}", *tokens)
        if keys:
            pipe.delete(*[f"minicex:inflight:{key}" for key in keys])
        pipe.execute()


def renew(slots: dict[str, list[str]], lease_seconds: float) -> None:
    """Extend the lease of slots still held (the heartbeat of the engine holding them)."""
    slots = {name: tokens for name, tokens in slots.items() if tokens}
    if not slots:
        return
    until = time.time() + lease_seconds
    if limiter_url():
        with _redis_errors():
            pipe = _redis().pipeline(transaction=False)
            for name, tokens in slots.items():
                pipe.zadd(f"minicex:sem:{name}", dict.fromkeys(tokens, until), xx=True)
            pipe.execute()
        return
    for name, tokens in slots.items():
        with _locked_state(f"sem-{name}") as state:
            for token in tokens:
                if token in state:
                    state[token] = until


def in_use(name: str) -> int:
    """Slots of ``name`` held now (for progress pages and tests)."""
    now = time.time()
    if limiter_url():
        with _redis_errors():
            return int(_redis().zcount(f"minicex:sem:{name}", now, "+inf"))
    with _locked_state(f"sem-{name}") as state:
        return sum(1 for expiry in state.values() if expiry >= now)


def purge_owner(owner: str) -> int:
    """Free every slot a (dead) engine holds, in every limit, and its reservations of request keys (so that another
    engine may send its units' requests at once, not after the reservations' lease). Returns the slots freed."""
    prefix = f"{owner}|"
    removed = 0
    if limiter_url():
        with _redis_errors():
            client = _redis()
            for key in client.scan_iter(match="minicex:sem:*", count=500):
                removed += int(client.eval(_PURGE, 1, key, prefix))
            batch: list[bytes] = []
            for key in client.scan_iter(match="minicex:inflight:*", count=1000):
                batch.append(key)
                if len(batch) >= 500:
                    client.eval(_UNRESERVE_OWNER, len(batch), *batch, owner)
                    batch = []
            if batch:
                client.eval(_UNRESERVE_OWNER, len(batch), *batch, owner)
        return removed
    for path in _dir().glob("sem-*.json"):
        with _locked_state(path.stem) as state:
            for member in [m for m in state if m.startswith(prefix)]:
                del state[member]
                removed += 1
    with _locked_state("inflight") as state:
        for key in [k for k, (holder, _) in state.items() if holder == owner]:
            del state[key]
    return removed


def reserved_by(keys: Iterable[str]) -> dict[str, str]:
    """Who holds the reservations of these request keys now (tests and benchmarks)."""
    keys = list(keys)
    if limiter_url():
        with _redis_errors():
            values = _redis().mget([f"minicex:inflight:{key}" for key in keys]) if keys else []
        return {key: value.decode() for key, value in zip(keys, values, strict=True) if value is not None}
    now = time.time()
    with _locked_state("inflight") as state:
        return {key: state[key][0] for key in keys if key in state and state[key][1] >= now}


# ---------------------------------------------------------------------------------------------------------------
# buckets
# ---------------------------------------------------------------------------------------------------------------
def take_upto(name: str, per_minute: int | None, want: int, each: float = 1.0) -> tuple[int, float]:
    """Token bucket: take up to ``want`` portions of ``each`` (one request, or an estimate of its tokens) from a
    budget of ``per_minute``. Returns (portions taken, seconds until the next portion when none was taken)."""
    if not per_minute or want <= 0:
        return want, 0.0
    rate = per_minute / 60.0
    capacity = float(per_minute)
    each = min(max(float(each), 1e-9), capacity)
    now = time.time()
    if limiter_url():
        with _redis_errors():
            n, wait = _redis().eval(_BUCKET, 1, f"minicex:bucket:{name}", now, rate, capacity, each, int(want))
        return int(n), float(wait)
    with _locked_state(f"bucket-{name}") as state:
        elapsed = max(0.0, now - float(state.get("ts", now)))
        tokens = min(capacity, float(state.get("tokens", capacity)) + elapsed * rate)
        n = int(min(want, math.floor(tokens / each)))
        wait = 0.0
        if n > 0:
            tokens -= n * each
        else:
            wait = (each - tokens) / rate
        state.update(tokens=tokens, ts=now)
    return n, wait


def take(name: str, per_minute: int | None, amount: float = 1.0) -> float:
    """Take one portion of ``amount``: 0 when allowed now, else the seconds to wait (nothing is taken then)."""
    n, wait = take_upto(name, per_minute, 1, amount)
    return 0.0 if n else wait


# ---------------------------------------------------------------------------------------------------------------
# reservations of request keys
# ---------------------------------------------------------------------------------------------------------------
def reserve(keys: Iterable[str], seconds: float, owner: str) -> set[str]:
    """Reserve request keys about to be sent; returns those reserved (the others are being sent by someone else)."""
    keys = list(keys)
    if not keys:
        return set()
    ttl = max(1, int(math.ceil(seconds)))
    if limiter_url():
        with _redis_errors():
            pipe = _redis().pipeline(transaction=False)
            for key in keys:
                pipe.set(f"minicex:inflight:{key}", owner, nx=True, ex=ttl)
            return {key for key, ok in zip(keys, pipe.execute(), strict=True) if ok}
    now = time.time()
    reserved = set()
    with _locked_state("inflight") as state:
        for key in keys:
            holder = state.get(key)
            if holder is None or holder[1] < now:
                state[key] = [owner, now + ttl]
                reserved.add(key)
        if len(state) > 10_000:
            for key in [k for k, (_, expiry) in state.items() if expiry < now]:
                del state[key]
    return reserved


def unreserve(keys: Iterable[str]) -> None:
    keys = list(keys)
    if not keys:
        return
    if limiter_url():
        with _redis_errors():
            _redis().delete(*[f"minicex:inflight:{key}" for key in keys])
        return
    with _locked_state("inflight") as state:
        for key in keys:
            state.pop(key, None)


def reset(name: str) -> None:
    """Forget every limit state whose name starts with ``name`` (tests and benchmarks)."""
    if limiter_url():
        client = _redis()
        for kind in ("sem", "bucket"):
            for key in client.scan_iter(match=f"minicex:{kind}:{name}*"):
                client.delete(key)
        return
    for kind in ("sem", "bucket"):
        for path in _dir().glob(f"{kind}-{name}*.json"):
            path.unlink(missing_ok=True)
