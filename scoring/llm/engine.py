"""The engine for LLM work: units claimed in batches, requests sent concurrently on one event loop, answers stored
in batches, retries scheduled in the database.

A job kind (judge runs, preference judging, dialogue generation) registers a :class:`Handler` that knows its run
and unit tables, how to build the request of a unit and how to store an answer; the engine knows nothing else
about it. The database is the source of truth: a unit is *open* until its answer is stored, *claimed* by the engine
that sends its request (the claim names the engine; an engine whose heartbeat stopped loses its claims at once),
and *due* once its retry time has come. The broker only wakes engines up (:func:`wake`); a reconciler in every
worker wakes them again when a message was lost.

Exactly once: an answer is stored together with its units in one transaction, and only into units still open; a
request whose answer is stored is never sent again (every request is cached by a hash of endpoint, model, messages
and parameters, and checked before it is sent); two engines never send the same request at once (reservations).
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import math
import os
import random
import socket
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, DateTimeField, DurationField, ExpressionWrapper, F, Max, Model, Q, QuerySet, Value
from django.db.models.expressions import Col
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from projects import scoping
from scoring.llm import budget, gateway, journal, limiter
from scoring.llm.models import LLMCall, LLMWorker

log = logging.getLogger(__name__)

WAKE_TASK = "scoring.llm.wake"
TRACE = bool(os.environ.get("LLM_ENGINE_TRACE"))


_warned: dict[str, float] = {}


def warn_now_and_then(key: str, message: str, *args, every: float = 30.0) -> None:
    """Log a warning at most every ``every`` seconds per key (an outage must not flood the log)."""
    now = time.monotonic()
    if now - _warned.get(key, -every) >= every:
        _warned[key] = now
        log.warning(message, *args)


def _setting(name: str, default: float) -> float:
    return float(getattr(settings, name, default))


# ---------------------------------------------------------------------------------------------------------------
# what a job kind provides
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Limit:
    """A shared budget: concurrency (requests in flight, all workers) and requests / tokens per minute."""

    name: str
    concurrency: int
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None


def endpoint_limit(endpoint: gateway.Endpoint, config: dict) -> Limit:
    """The shared budget of an endpoint and its key (what a provider limits): every judge run, preference judge and
    generation job sending to the same endpoint with the same key shares its concurrency and rates."""
    digest = hashlib.sha1(f"{endpoint.base_url}|{endpoint.key_source}".encode()).hexdigest()[:16]
    return Limit(f"endpoint-{digest}", int(config.get("concurrency") or 1), config.get("requests_per_minute"),
                 config.get("tokens_per_minute"))


@dataclass(eq=False)
class Request:
    """One request to send for one or more units (a per-dialogue judge answers every item of a dialogue)."""

    units: list[int]
    endpoint: gateway.Endpoint
    payload: dict
    key: str
    limit: Limit
    timeout: float
    prices: tuple[Decimal, Decimal]
    attempts: int
    max_attempts: int
    data: Any = None
    # filled in by the engine
    slot: str | None = None
    reserved: bool = False
    call: LLMCall | None = None
    from_cache: bool = False
    outcome: gateway.Outcome | None = None
    job_id: int = 0
    # monotonic time after which a prepared request is no longer sent: it could not be answered before its units'
    # claim (and its reservation) lapse and another engine may claim them (see scoring.llm.worker)
    send_before: float = float("inf")

    @property
    def token_estimate(self) -> float:
        chars = sum(len(str(m.get("content") or "")) for m in self.payload.get("messages", []))
        return chars / 3 + float(self.payload.get("max_tokens") or 0)


class Handler:
    """A job kind on the engine. Subclasses set the models and implement :meth:`prepare` and :meth:`apply`."""

    kind: str
    job_model: type[Model]
    unit_model: type[Model]
    job_field: str = "run"  # the unit's foreign key to its job
    open_statuses: tuple[str, ...] = ("pending",)
    failed_status: str = "failed"
    running_status: str = "running"
    active_statuses: tuple[str, ...] = ("queued", "running")

    # -- the job --------------------------------------------------------------------------------------------
    def config(self, job) -> dict:
        return job.snapshot

    def open_units(self, job_id: int) -> QuerySet:
        return self.unit_model.unscoped.filter(**{f"{self.job_field}_id": job_id, "status__in": self.open_statuses})

    # Units claimed one by one in id order can be claimed with a single UPDATE ... RETURNING on PostgreSQL (the
    # columns :meth:`load` needs); handlers that claim groups leave this empty.
    claim_columns: tuple[str, ...] = ()
    # Handlers whose apply() only updates rows still open (a condition in its own UPDATE) need no locked read of
    # the open units first.
    applies_conditionally: bool = False

    def claim_columns_for(self, job) -> tuple[str, ...]:
        return self.claim_columns

    def pick(self, job, claimable: QuerySet, n: int) -> list[int]:
        """The ids of the next ``n`` units to claim (a handler may claim groups)."""
        return list(claimable.order_by("pk").values_list("pk", flat=True)[:n])

    def load(self, ids: list[int]) -> list:
        """The claimed unit rows, with what :meth:`prepare` needs."""
        return list(self.unit_model.unscoped.filter(pk__in=ids).order_by("pk"))

    # Units whose answer was stored and used, and units that ended without one (failed, or an unparseable answer).
    done_statuses: tuple[str, ...] = ("done",)
    problem_statuses: tuple[str, ...] = ("failed", "unscored")

    def maybe_finish(self, job_id: int) -> bool:
        """End the job from database state once no unit is open: *Finished* when answers were stored, *Finished with
        problems* when more than ``LLM_PROBLEM_SHARE`` of the units failed or were unscored, *Failed* when no
        answer could be used; the error names the top causes with their counts."""
        if self.open_units(job_id).exists():
            return False
        status, message = end_state(self, job_id)
        ended = bool(self.job_model.unscoped.filter(pk=job_id, status=self.running_status).update(
            status=status, error=message[:2000], finished_at=timezone.now()))
        if ended and status in self.job_model.FINISHED:
            self._announce_finished(job_id)
        return ended

    def finished(self, job) -> None:
        """Called once when a job ended with answers stored, inside the job's project: handlers queue what follows
        (the reports its answers feed). Nothing by default."""

    def _announce_finished(self, job_id: int) -> None:
        try:
            job = self.job_model.unscoped.get(pk=job_id)
            with scoping.in_project(job.project_id):
                self.finished(job)
        except Exception as exc:  # the job's end stands; a page that finds its figures stale queues them itself
            log.warning("%s %s finished, but what follows could not be queued: %s", self.kind, job_id, exc)

    def fail_job(self, job_id: int, message: str) -> None:
        self.job_model.unscoped.filter(pk=job_id, status__in=self.active_statuses).update(
            status="failed", error=message[:2000], finished_at=timezone.now())

    def pause_job(self, job_id: int, message: str) -> bool:
        """Pause a running job with the reason (a refused key, a spending cap, answers that could not be stored):
        nothing more is sent until a coordinator resumes it."""
        return bool(self.job_model.unscoped.filter(pk=job_id, status__in=self.active_statuses).update(
            status="paused", error=message[:2000]))

    # -- what the job may send ------------------------------------------------------------------------------
    def attempts_per_unit(self, job) -> int:
        return max(1, int(self.config(job).get("max_attempts") or 1))

    def request_units(self, job) -> int:
        """The most requests the job's open units need, one answered request each (a handler whose request
        covers several units, or whose unit takes several requests, says so)."""
        return self.open_units(job.pk).count()

    def currency(self, job) -> str:
        return str(self.config(job).get("currency") or "USD")

    # -- the units ------------------------------------------------------------------------------------------
    def prepare(self, job, units: list) -> list[Request]:
        """The requests of claimed units. A unit that needs no request may be finished here (its claim released);
        raise ``gateway.NotConfigured`` to fail the job."""
        raise NotImplementedError

    def apply(self, job, requests: list[Request], open_ids: set[int]) -> None:
        """Store the answers (``request.call``, ``request.from_cache``) into the units still open
        (``open_ids``), releasing their claims. Called inside the transaction that stored the calls."""
        raise NotImplementedError

    def record_call(self, job, request: Request, call: LLMCall) -> None:
        """Charge a paid call to the job when its figures are not derived from the units (generation)."""

    @property
    def answers_recoverable(self) -> bool:
        """Whether a dead engine's unstored answers of this kind can be put into the request cache from its journal:
        only when the job's figures follow from its calls and units (a handler that records each call itself needs
        the request's own data, which the journal does not keep)."""
        return type(self).record_call is Handler.record_call


HANDLERS: dict[str, Handler] = {}
# Set by scoring.llm.batch when it is imported: ``submit(handler, job, owner)`` sends a job's due units as one
# provider batch (jobs whose configuration has ``"batch": true``).
batch_submitter = None


def register(handler: Handler) -> Handler:
    HANDLERS[handler.kind] = handler
    return handler


def handler_for(kind: str) -> Handler:
    try:
        return HANDLERS[kind]
    except KeyError:
        raise LookupError(f"no engine handler registered for {kind!r}") from None


# ---------------------------------------------------------------------------------------------------------------
# how a job ends, and what it may send
# ---------------------------------------------------------------------------------------------------------------
def problem_share() -> float:
    """Above this share of failed or unscored units a job ends *Finished with problems*."""
    return _setting("LLM_PROBLEM_SHARE", 0.05)


def top_causes(handler: Handler, job_id: int, limit: int = 3) -> list[tuple[str, int]]:
    """The most frequent reasons units of a job failed or were unscored, with their counts."""
    rows = (handler.unit_model.unscoped.filter(**{f"{handler.job_field}_id": job_id},
                                              status__in=handler.problem_statuses)
            .values_list("error").annotate(n=Count("pk")).order_by("-n", "error")[:limit])
    return [(error or "no reason recorded", n) for error, n in rows]


def end_state(handler: Handler, job_id: int) -> tuple[str, str]:
    """(status, message) of a job with no open unit."""
    counts = dict(handler.unit_model.unscoped.filter(**{f"{handler.job_field}_id": job_id})
                  .values_list("status").annotate(n=Count("pk")).order_by())
    total = sum(counts.values())
    done = sum(counts.get(s, 0) for s in handler.done_statuses)
    problems = sum(counts.get(s, 0) for s in handler.problem_statuses)
    if not total or not problems:
        return "succeeded", ""
    causes = "; ".join(f"{cause} ({n:,})" for cause, n in top_causes(handler, job_id))
    if not done:
        return "failed", f"No answer could be used: all {total:,} units failed or were unscored. {causes}"
    if problems / total > problem_share():
        return "problems", f"{problems:,} of {total:,} units failed or were unscored. {causes}"
    return "succeeded", ""


def _money(value: Decimal, currency: str) -> str:
    return f"{value:.4f} {currency}"


def cap_reached(row: dict, currency: str) -> str:
    """Why a job's spending cap stops it ("" when no cap is reached)."""
    if row.get("cost_cap") is not None and row["spent_cost"] >= row["cost_cap"]:
        return (f"Spending cap reached: {_money(row['spent_cost'], currency)} spent of a cap of "
                f"{_money(row['cost_cap'], currency)}. Raise the cap to go on.")
    if row.get("token_cap") is not None and row["spent_tokens"] >= row["token_cap"]:
        return (f"Token cap reached: {row['spent_tokens']:,} tokens used of a cap of {row['token_cap']:,}. "
                "Raise the cap to go on.")
    return ""


_ACCOUNT = ("status", "requests_sent", "request_limit", "spent_cost", "spent_tokens", "cost_cap", "token_cap")


def charge(handler: Handler, job, requests: list[Request]) -> list[Request]:
    """Count requests against the job *before* they are sent; returns those that may go, the others released.

    None may go when the job is not running, when a spending cap or its project's monthly budget is reached (the
    job pauses) or when its request limit is reached (the units nobody is sending fail with that reason, so the
    job ends and says why). The limit is set on the first charge: the open units' requests x the attempts per
    unit. The requests granted are counted against the project's month too (:mod:`scoring.llm.budget`)."""
    if not requests:
        return []
    model = handler.job_model
    limit = None
    over_budget = ""
    with transaction.atomic():
        row = model.unscoped.select_for_update().filter(pk=job.pk).values(*_ACCOUNT).first()
        granted = 0
        if row is not None and row["status"] == handler.running_status:
            stop = cap_reached(row, handler.currency(job))
            if stop:
                model.unscoped.filter(pk=job.pk).update(status="paused", error=stop)
            else:
                changes: dict[str, Any] = {}
                limit = row["request_limit"]
                if limit is None:
                    limit = row["requests_sent"] + handler.request_units(job) * handler.attempts_per_unit(job)
                    changes["request_limit"] = limit
                granted = max(0, min(len(requests), limit - row["requests_sent"]))
                if granted:
                    granted, over_budget = budget.charge(job.project_id, requests[:granted], handler.currency(job))
                if granted:
                    changes["requests_sent"] = F("requests_sent") + granted
                if over_budget:
                    changes.update(status="paused", error=over_budget)
                if changes:
                    model.unscoped.filter(pk=job.pk).update(**changes)
    release(handler, [u for r in requests[granted:] for u in r.units])
    if over_budget:
        warn_now_and_then(f"budget-{job.project_id}", "%s %s paused: %s", handler.kind, job.pk, over_budget)
    elif limit is not None and granted < len(requests):
        limit_reached(handler, job, limit)
    return requests[:granted]


def refund(handler: Handler, job_id: int, n: int, *, endpoint: str = "") -> None:
    """Give back the count of charged requests that were not sent after all (released before sending); with the
    ``endpoint`` they went to, to the project's month as well."""
    if n > 0:
        handler.job_model.unscoped.filter(pk=job_id, requests_sent__gte=n).update(requests_sent=F("requests_sent") - n)
        if endpoint:
            job = handler.job_model.unscoped.filter(pk=job_id).first()
            if job is not None:
                budget.give_back(job.project_id, endpoint, handler.currency(job), n)


def refund_requests(handler: Handler, job_id: int, requests: list[Request]) -> None:
    """:func:`refund` for these requests (per endpoint)."""
    counts: dict[str, int] = defaultdict(int)
    for r in requests:
        counts[r.endpoint.base_url] += 1
    for endpoint, n in counts.items():
        refund(handler, job_id, n, endpoint=endpoint)


def limit_reached(handler: Handler, job, limit: int) -> None:
    """The job sent all it may: its units that nobody is sending now fail with the reason (a coordinator's "retry"
    asks them again with a fresh allowance), and the job ends once the requests in flight are stored."""
    now = timezone.now()
    reason = (f"not sent: the job reached its request limit ({limit:,} requests: its units x "
              f"{handler.attempts_per_unit(job)} attempts each)")
    handler.open_units(job.pk).filter(free_claim(live_owners())).update(
        status=handler.failed_status, error=reason, claimed_by="", claimed_until=None, updated_at=now)
    warn_now_and_then(f"limit-{handler.kind}-{job.pk}", "%s %s reached its request limit (%s)", handler.kind,
                      job.pk, limit)
    handler.maybe_finish(job.pk)


def grow_limit(handler: Handler, job, units: int) -> None:
    """A coordinator asks ``units`` request units again ("retry"): the job may send that many more x attempts."""
    if units > 0:
        handler.job_model.unscoped.filter(pk=job.pk, request_limit__isnull=False).update(
            request_limit=F("request_limit") + units * handler.attempts_per_unit(job))


def record_spend(handler: Handler, job, requests: list[Request]) -> str:
    """Add what fresh answers cost to the job; a job whose spending cap is now reached pauses (returns why)."""
    if not requests:
        return ""
    cost = sum((gateway.cost(r.outcome.prompt_tokens, r.outcome.completion_tokens, *r.prices) for r in requests),
               Decimal(0))
    tokens = sum(r.outcome.prompt_tokens + r.outcome.completion_tokens for r in requests)
    model = handler.job_model
    row = _add_spend(model, job.pk, cost, tokens)
    budget.record(job.project_id, requests, handler.currency(job),
                  lambda r: gateway.cost(r.outcome.prompt_tokens, r.outcome.completion_tokens, *r.prices))
    stop = cap_reached(row, handler.currency(job)) if row else ""
    if stop:
        model.unscoped.filter(pk=job.pk, status=handler.running_status).update(status="paused", error=stop)
    return stop


def _add_spend(model: type[Model], job_id: int, cost: Decimal, tokens: int) -> dict[str, Any] | None:
    """Add to a job's spend and read its account back (``_ACCOUNT``, as the ORM gives it) in one statement: the
    engine does this after every batch of answers, and the update and the read were a tenth of its CPU as two
    queries. ``UPDATE ... RETURNING`` (PostgreSQL, SQLite 3.35 and later); None when the job is gone."""
    meta = model._meta
    quote = connection.ops.quote_name
    account = [meta.get_field(name) for name in _ACCOUNT]
    cost_field, tokens_field = meta.get_field("spent_cost"), meta.get_field("spent_tokens")
    cost_column, tokens_column = quote(cost_field.column), quote(tokens_field.column)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {quote(meta.db_table)} SET {cost_column} = {cost_column} + %s, "
            f"{tokens_column} = {tokens_column} + %s WHERE {quote(meta.pk.column)} = %s "
            f"RETURNING {', '.join(quote(f.column) for f in account)}",
            [cost_field.get_db_prep_save(cost, connection), tokens, job_id])
        values = cursor.fetchone()
    if values is None:
        return None
    row = {}
    for target, value in zip(account, values, strict=True):
        column = Col(meta.db_table, target)
        for convert in (*connection.ops.get_db_converters(column), *column.get_db_converters(connection)):
            value = convert(value, column, connection)
        row[target.name] = value
    return row


# ---------------------------------------------------------------------------------------------------------------
# waking workers
# ---------------------------------------------------------------------------------------------------------------
def wake(kind: str, job_id: int) -> None:
    """Ask the LLM workers to work on a job, once the current transaction commits. If the broker cannot be reached,
    the reconciler wakes the job when it is back."""
    transaction.on_commit(lambda: send_wake(kind, job_id))


def send_wake(kind: str, job_id: int, copies: int | None = None) -> bool:
    """Send the wake-up messages now: one per live worker (at least one); each engine works on the job until
    nothing of it is left to claim. Returns False when the broker cannot be reached."""
    from celery import current_app

    n = copies or max(1, min(8, len(live_owners())))
    try:
        with current_app.producer_or_acquire() as producer:
            for _ in range(n):
                current_app.send_task(WAKE_TASK, (kind, job_id), producer=producer)
    except Exception as exc:
        warn_now_and_then(f"wake-{kind}-{job_id}", "could not wake the workers for %s %s: %s", kind, job_id, exc)
        return False
    handler_for(kind).job_model.unscoped.filter(pk=job_id).update(woken_at=timezone.now())
    return True


# ---------------------------------------------------------------------------------------------------------------
# engines' liveness
# ---------------------------------------------------------------------------------------------------------------
HOSTNAME = socket.gethostname()
_live_cache: tuple[float, frozenset[str]] = (0.0, frozenset())
LIVE_PROCESS_GRACE = 3  # x dead_after(): the silence after which an engine whose process is still here counts as dead
reaped_total = 0  # engines this process has reaped: a live engine looks at its units again when it grows
BATCH_OWNER = "batch:"  # units handed to a provider batch; held until the batch gives them back (claimed_until)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def heartbeat_seconds() -> float:
    return _setting("LLM_HEARTBEAT_SECONDS", 1.0)


def dead_after() -> float:
    """The silence after which an engine counts as dead: a few heartbeats missed in a row."""
    return _setting("LLM_WORKER_DEAD_AFTER", heartbeat_seconds() * _setting("LLM_WORKER_MISSED_BEATS", 5))


def live_owners(*, fresh: bool = False) -> frozenset[str]:
    """Engines whose heartbeat is recent (on this host: whose process exists). Engines found dead are reaped at
    once (:func:`reap`): their unstored answers recovered, their slots and reservations freed, so that whoever
    claims their units next can send at once and need not ask what was answered already. Every live engine looks
    on each of its heartbeats (and whoever claims, at most once a second), so a dead one is found within a beat
    of going silent."""
    global _live_cache, reaped_total
    now = time.monotonic()
    stamp, engines = _live_cache
    if fresh or now - stamp > 1.0:
        limit = timedelta(seconds=dead_after())
        # An engine of this machine whose process is there is slowed (a loaded machine, a slow database), not dead:
        # it counts as dead only after a longer silence, so that a busy sibling's claims are not taken (and its
        # requests sent again) while it is still working. Its process gone, it is dead at once.
        slow_limit = limit * LIVE_PROCESS_GRACE
        live, dead = set(), []
        # Silence is measured on the database's clock, which stamped every beat (:func:`ensure_registered`): a
        # machine whose clock is ahead would otherwise take live engines for dead, one behind keep dead ones.
        silences = LLMWorker.objects.annotate(silence=ExpressionWrapper(Now() - F("seen_at"),
                                                                        output_field=DurationField()))
        for owner, host, pid, silence in silences.values_list("owner", "hostname", "pid", "silence"):
            if silence <= limit if host != HOSTNAME else (silence <= slow_limit and _pid_alive(pid)):
                live.add(owner)
            elif owner != _owner:  # never itself (a heartbeat held up by the database is not a death)
                dead.append(owner)
        engines = frozenset(live)
        _live_cache = (now, engines)
        if dead:
            reaped_total += len(reap(dead))
    return engines


def reap(owners: Iterable[str]) -> list[str]:
    """Forget dead engines: their answers received but not stored are put into the request cache from their journal
    (when it is on this machine), their slots and reservations of request keys are freed, and their heartbeat rows
    deleted (their claims were free as soon as they were found dead). Returns the engines reaped."""
    reaped = []
    for owner in owners:
        try:
            with transaction.atomic():
                recovered = recover_answers(journal.file_stem(owner))
                limiter.purge_owner(owner)
                LLMWorker.objects.filter(owner=owner).delete()
        except limiter.LimiterUnavailable as exc:
            warn_now_and_then(f"reap-{owner}", "could not free the slots of the stopped LLM engine %s yet: %s",
                              owner, exc)
            continue
        except Exception as exc:
            if _is_outage(exc):
                raise
            log.exception("could not reap the stopped LLM engine %s", owner)
            continue
        reaped.append(owner)
        log.warning("the LLM engine %s stopped: its claims, slots and reservations are free%s", owner,
                    f"; {recovered} answers it had not stored were recovered" if recovered else "")
    return reaped


def journal_entry(handler: Handler, job, request: Request) -> dict[str, Any]:
    """What the journal keeps of a paid answer: enough to store it as a call of the job's project."""
    o = request.outcome
    return {"kind": handler.kind, "job": job.pk, "key": request.key, "units": request.units,
            "endpoint": request.endpoint.base_url, "request": request.payload, "response": o.response,
            "content": o.content, "prompt_tokens": o.prompt_tokens, "completion_tokens": o.completion_tokens,
            "latency_ms": o.latency_ms, "prices": [str(p) for p in request.prices]}


def recover_answers(stem: str) -> int:
    """Put the answers a dead engine received but did not store (its journal in this machine's var folder) into
    the request cache, their cost and tokens charged to their jobs; its units are then answered from the cache
    without a request. A segment being recovered by another process is skipped. Returns the answers recovered."""
    recovered = 0
    for path in journal.segments_of(stem):
        try:
            lock = open(path, "rb")  # noqa: SIM115 - closed below
        except FileNotFoundError:
            continue
        with lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            if not path.exists():  # recovered meanwhile by another process
                continue
            recovered += _recover_entries(list(journal.read(path)))
            journal.remove(path)
    return recovered


def _recover_entries(entries: list[dict[str, Any]]) -> int:
    by_job: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for entry in entries:
        by_job[(entry["kind"], entry["job"])].append(entry)
    recovered = 0
    for (kind, job_id), group in by_job.items():
        handler = HANDLERS.get(kind)
        job = handler.job_model.unscoped.filter(pk=job_id).first() if handler is not None else None
        if job is None:
            continue
        requests: dict[str, Request] = {}
        for e in group:
            requests[e["key"]] = Request(
                units=e["units"], endpoint=gateway.Endpoint(e["endpoint"], "", ""), payload=e["request"],
                key=e["key"], limit=Limit("recovered", 1), timeout=0.0,
                prices=(Decimal(e["prices"][0]), Decimal(e["prices"][1])), attempts=0, max_attempts=1,
                outcome=gateway.Outcome(ok=True, content=e["content"], response=e["response"],
                                        prompt_tokens=e["prompt_tokens"], completion_tokens=e["completion_tokens"],
                                        latency_ms=e["latency_ms"]))
        with transaction.atomic():
            known = cached_calls(set(requests))
            new = [r for key, r in requests.items() if key not in known]
            if new:
                _store_calls(new, job.project_id)
                record_spend(handler, job, new)
        recovered += len(new)
    return recovered


def lease_until(seconds: float) -> ExpressionWrapper:
    """The end of a claim's lease ``seconds`` from now on the database's clock, the one every machine shares (as
    the engines' heartbeats, :func:`ensure_registered`): a machine whose clock is ahead would otherwise hold units
    long after its engine died, one behind give units a lease already out and have them claimed twice."""
    return ExpressionWrapper(Now() + timedelta(seconds=seconds), output_field=DateTimeField())


def free_claim(live: Iterable[str]) -> Q:
    """Units nobody holds: never claimed, released, expired (on the database's clock: :func:`lease_until`), or held
    by an engine that is gone (a provider batch's units are held until the batch gives them back or its claim
    expires)."""
    return (Q(claimed_by="") | Q(claimed_until__isnull=True) | Q(claimed_until__lt=Now())
            | (~Q(claimed_by__startswith=BATCH_OWNER) & ~Q(claimed_by__in=list(live))))


def due(now) -> Q:
    return Q(not_before__isnull=True) | Q(not_before__lte=now)


def claimable(handler: Handler, job_id: int, now=None, *, live: Iterable[str] | None = None) -> QuerySet:
    now = now or timezone.now()
    live = live_owners() if live is None else live
    return handler.open_units(job_id).filter(free_claim(live)).filter(due(now))


# ---------------------------------------------------------------------------------------------------------------
# the steps of a cycle (shared by the worker's engine and the synchronous path)
# ---------------------------------------------------------------------------------------------------------------
def lease_seconds(config: dict) -> float:
    """How long a claim or slot stays reserved without its engine: longer than one request can take."""
    return float(config.get("timeout_seconds", 60)) * 1.5 + 5


def backoff(attempt: int, retry_after: float | None = None) -> float:
    """Exponential backoff with jitter, at least what the provider asked for in Retry-After."""
    delay = min(60.0, 1.0 * (2 ** max(0, attempt - 1))) * random.uniform(0.5, 1.5)
    return max(delay, retry_after or 0.0)


def claim(handler: Handler, job, n: int, owner: str, *, ids: list[int] | None = None) -> list:
    """Claim up to ``n`` due units of a running job for ``owner`` (or the given ``ids`` if they are claimable).
    Claims of one job are serialised by a lock on its row, so groups are never split between engines."""
    if n <= 0:
        return []
    now = timezone.now()
    lease = lease_seconds(handler.config(job))
    columns = handler.claim_columns_for(job)
    # The live engines read now, not from the second-old cache: an engine started since (a replacement worker's
    # sibling) may hold units already, and a claim that took it for dead would send its requests again.
    live = live_owners(fresh=True)
    if columns and ids is None and connection.vendor == "postgresql":
        return _claim_returning(handler, job, columns, n, owner, now, lease, live)
    with transaction.atomic():
        running = list(handler.job_model.unscoped.select_for_update().filter(
            pk=job.pk, status=handler.running_status).values_list("pk", flat=True))
        if not running:
            return []
        qs = claimable(handler, job.pk, now, live=live)
        picked = list(qs.filter(pk__in=ids).values_list("pk", flat=True)) if ids is not None else \
            handler.pick(job, qs, n)
        if not picked:
            return []
        handler.unit_model.unscoped.filter(pk__in=picked).update(claimed_by=owner, claimed_until=lease_until(lease))
    return handler.load(picked)


def _claim_returning(handler: Handler, job, names: tuple[str, ...], n: int, owner: str, now, lease: float,
                     live: Iterable[str]) -> list:
    """One statement: claim the next ``n`` due units of a running job (skipping rows another claim has locked)
    for a lease of ``lease`` seconds on the database's clock, and return the columns the handler needs."""
    unit, parent = handler.unit_model._meta, handler.job_model._meta
    quote = connection.ops.quote_name
    job_column = quote(unit.get_field(handler.job_field).column)
    wanted = {unit.get_field(name).attname for name in names}
    columns = [f for f in unit.concrete_fields if f.attname in wanted]  # from_db() takes them in this order
    statuses = ", ".join(["%s"] * len(handler.open_statuses))
    sql = (f"UPDATE {quote(unit.db_table)} SET claimed_by = %s, claimed_until = STATEMENT_TIMESTAMP() + %s "
           f"WHERE id IN ("
           f"SELECT u.id FROM {quote(unit.db_table)} u WHERE u.{job_column} = %s AND u.status IN ({statuses}) "
           f"AND (u.claimed_by = '' OR u.claimed_until IS NULL OR u.claimed_until < STATEMENT_TIMESTAMP() "
           f"OR (u.claimed_by NOT LIKE 'batch:%%' AND NOT (u.claimed_by = ANY(%s)))) "
           f"AND (u.not_before IS NULL OR u.not_before <= %s) "
           f"AND EXISTS (SELECT 1 FROM {quote(parent.db_table)} j WHERE j.id = %s AND j.status = %s) "
           f"ORDER BY u.id LIMIT %s FOR UPDATE SKIP LOCKED) "
           f"RETURNING {', '.join(quote(c.column) for c in columns)}")
    params = [owner, timedelta(seconds=lease), job.pk, *handler.open_statuses, list(live), now, job.pk,
              handler.running_status, n]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    names = [c.attname for c in columns]
    units = [handler.unit_model.from_db(connection.alias, names, row) for row in rows]
    units.sort(key=lambda u: u.pk)
    return units


def release(handler: Handler, ids: Iterable[int], *, not_before=None, owner: str | None = None) -> None:
    """Give units back unanswered (optionally not before a time; with ``owner``, only those it still holds)."""
    ids = list(ids)
    if ids:
        units = handler.unit_model.unscoped.filter(pk__in=ids)
        if owner is not None:
            units = units.filter(claimed_by=owner)
        units.update(claimed_by="", claimed_until=None, not_before=not_before)


def bulk_set(model: type[Model], rows: list[tuple[int, list]], fields: list[str], constants: dict | None = None,
             *, only_status: Iterable[str] | None = None) -> None:
    """Set ``fields`` (to each row's values) and ``constants`` on many rows in one statement per 1,000 rows (only on
    rows whose status is in ``only_status``, when given): an ``UPDATE ... FROM (VALUES ...)``, which costs a fraction
    of Django's ``bulk_update`` (a CASE per field and row, built in Python: nine tenths of storing answers)."""
    if not rows:
        return
    widths = {len(values) for _, values in rows}
    if widths != {len(fields)}:  # a row that does not line up with the columns would store values in wrong ones
        raise ValueError(f"bulk_set: {len(fields)} fields ({', '.join(fields)}) but rows of "
                         f"{', '.join(map(str, sorted(widths)))} values")
    constants = constants or {}
    postgres = connection.vendor == "postgresql"
    if not postgres and not _sqlite_update_from():
        _bulk_update(model, rows, fields, constants, only_status)
        return
    meta = model._meta
    columns = [meta.get_field(name) for name in fields]
    quote = connection.ops.quote_name
    if postgres:
        row_sql = "(%s::bigint, " + ", ".join(f"%s::{field.db_type(connection)}" for field in columns) + ")"
    else:
        row_sql = "(" + ", ".join(["%s"] * (len(columns) + 1)) + ")"
    assignments = [f"{quote(f.column)} = v.{quote(f.column)}" for f in columns]
    params_const = []
    for name, value in constants.items():
        field = meta.get_field(name)
        assignments.append(f"{quote(field.column)} = %s")
        params_const.append(field.get_db_prep_save(value, connection))
    alias = ", ".join(quote(f.column) for f in columns)
    statuses = list(only_status) if only_status is not None else []
    condition = f" AND t.{quote('status')} IN ({', '.join(['%s'] * len(statuses))})" if statuses else ""
    if only_status is not None and not statuses:
        return
    chunk_size = min(1000, 30000 // (len(columns) + 1))  # SQLite takes at most 32,766 parameters a statement
    for start in range(0, len(rows), chunk_size):
        chunk = rows[start:start + chunk_size]
        values = ", ".join([row_sql] * len(chunk))
        params_values = []
        for pk, row in chunk:
            params_values.append(pk)
            params_values.extend(f.get_db_prep_save(v, connection) for f, v in zip(columns, row, strict=True))
        where = f"t.{quote(meta.pk.column)} = v.id{condition}"
        if postgres:
            sql = (f"UPDATE {quote(meta.db_table)} AS t SET {', '.join(assignments)} "
                   f"FROM (VALUES {values}) AS v(id, {alias}) WHERE {where}")
            params = [*params_const, *params_values, *statuses]
        else:  # SQLite names a VALUES list's columns only in a WITH clause
            sql = (f"WITH v(id, {alias}) AS (VALUES {values}) "
                   f"UPDATE {quote(meta.db_table)} AS t SET {', '.join(assignments)} FROM v WHERE {where}")
            params = [*params_values, *params_const, *statuses]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)


def _sqlite_update_from() -> bool:
    """SQLite has ``UPDATE ... FROM`` since 3.33 (2020)."""
    return connection.vendor == "sqlite" and connection.Database.sqlite_version_info >= (3, 33)


def _bulk_update(model: type[Model], rows: list[tuple[int, list]], fields: list[str], constants: dict,
                 only_status: Iterable[str] | None) -> None:
    """:func:`bulk_set` by Django's ``bulk_update``, where the database has no ``UPDATE ... FROM``."""
    if only_status is not None:
        still_open = set(model.unscoped.filter(pk__in=[pk for pk, _ in rows], status__in=list(only_status))
                         .values_list("pk", flat=True))
        rows = [row for row in rows if row[0] in still_open]
    # By attribute name: a foreign key's value is its id (``call_id``), not an instance.
    attnames = {name: model._meta.get_field(name).attname for name in [*fields, *constants]}
    objects = []
    for pk, values in rows:
        obj = model(pk=pk)
        for name, value in [*zip(fields, values, strict=True), *constants.items()]:
            setattr(obj, attnames[name], value)
        objects.append(obj)
    model.unscoped.bulk_update(objects, [*fields, *constants], batch_size=500)


CALL_COLUMNS = ["key", "project", "endpoint", "model", "request", "response", "content", "prompt_tokens",
                "completion_tokens", "cost", "latency_ms", "created_at"]


def _insert_calls(rows: list[LLMCall]) -> dict[str, int]:
    """INSERT ... ON CONFLICT (key) DO NOTHING RETURNING on PostgreSQL: the keys this insert stored, with ids."""
    meta = LLMCall._meta
    fields = [meta.get_field(name) for name in CALL_COLUMNS]
    quote = connection.ops.quote_name
    placeholders = "(" + ", ".join(f"%s::{f.db_type(connection)}" for f in fields) + ")"
    inserted: dict[str, int] = {}
    for start in range(0, len(rows), 500):
        chunk = rows[start:start + 500]
        params = [f.get_db_prep_save(getattr(row, f.attname), connection) for row in chunk for f in fields]
        sql = (f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "
               f"VALUES {', '.join([placeholders] * len(chunk))} ON CONFLICT ({quote('key')}) DO NOTHING "
               f"RETURNING {quote('id')}, {quote('key')}")
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            inserted.update({key: pk for pk, key in cursor.fetchall()})
    return inserted


def _store_calls(requests: list[Request], project_id: int) -> None:
    """Store the paid answers (bulk), as calls of the job's project; a request answered meanwhile by another engine
    keeps the first answer."""
    rows = []
    for r in requests:
        o = r.outcome
        rows.append(LLMCall(key=r.key, project_id=project_id, endpoint=r.endpoint.base_url,
                            model=r.payload.get("model", ""),
                            request=r.payload, response=o.response, content=o.content,
                            prompt_tokens=o.prompt_tokens, completion_tokens=o.completion_tokens,
                            latency_ms=o.latency_ms,
                            cost=gateway.cost(o.prompt_tokens, o.completion_tokens, *r.prices)))
    now = timezone.now()
    for row in rows:
        row.created_at = now
    if connection.vendor == "postgresql":
        inserted = _insert_calls(rows)
        calls = {row.key: row for row in rows if row.key in inserted}
        for row in calls.values():
            row.pk = inserted[row.key]
        missing = {r.key for r in requests} - set(calls)
        if missing:  # stored meanwhile by another engine: keep (and apply) the first answer
            calls.update(LLMCall.unscoped.in_bulk(missing, field_name="key"))
    else:
        LLMCall.unscoped.bulk_create(rows, ignore_conflicts=True, batch_size=500)
        calls = LLMCall.unscoped.in_bulk({r.key for r in requests}, field_name="key")
    for r in requests:
        r.call = calls[r.key]


def store(handler: Handler, job, requests: list[Request], *, from_cache: bool = False) -> None:
    """Store answers and apply them to their units in one transaction (a worker killed in between leaves neither
    a paid call uncounted nor an answer half applied)."""
    if not requests:
        return
    with transaction.atomic():
        if not from_cache:
            _store_calls(requests, job.project_id)
            for r in requests:
                handler.record_call(job, r, r.call)
            record_spend(handler, job, requests)
        ids = [u for r in requests for u in r.units]
        if handler.applies_conditionally:
            open_ids = set(ids)  # apply() itself updates only rows still open
        else:
            open_ids = set(handler.unit_model.unscoped.select_for_update().filter(
                pk__in=ids, status__in=handler.open_statuses).values_list("pk", flat=True))
        handler.apply(job, requests, open_ids)


def cached_calls(keys: set[str]) -> dict[str, LLMCall]:
    """The stored answers of these request keys (what ``apply`` needs of them: id, content, response)."""
    if not keys:
        return {}
    if connection.vendor != "postgresql":
        return LLMCall.unscoped.only("pk", "key", "content", "response").in_bulk(keys, field_name="key")
    names = ["id", "key", "response", "content"]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, key, response, content FROM {LLMCall._meta.db_table} WHERE key = ANY(%s)",
                       [list(keys)])
        rows = cursor.fetchall()
    response = LLMCall._meta.get_field("response")
    out = {}
    for pk, key, raw, content in rows:
        value = response.from_db_value(raw, None, connection) if isinstance(raw, str) else raw
        out[key] = LLMCall.from_db(connection.alias, names, (pk, key, value, content))
    return out


class AnswersNotStored(Exception):
    """Answers could not be applied to their units: they are kept in the request cache and the job is paused."""


def keep_answers(handler: Handler, job, requests: list[Request], exc: Exception, *, paid: bool) -> None:
    """Applying answers failed (a bug, bad data): keep the paid answers in the request cache (their own
    transaction), give the units back and pause the job with the error, so nothing is sent again in a loop. When
    the job is resumed the units are answered from the cache, without a new request."""
    if paid:
        with transaction.atomic():
            _store_calls(requests, job.project_id)
            record_spend(handler, job, requests)
    release(handler, [u for r in requests for u in r.units])
    what = f"{len(requests):,} paid answer(s) are kept" if paid else "the answers are in the request cache"
    message = (f"Answers could not be stored ({type(exc).__name__}: {exc}). Nothing more is sent; {what} and are "
               "applied, without new requests, when the job is resumed.")
    handler.pause_job(job.pk, message)
    log.error("%s %s paused: %s", handler.kind, job.pk, message, exc_info=exc)


def _is_outage(exc: Exception) -> bool:
    """The database is unreachable (nothing can be stored or paused now; try again later)."""
    from django.db import InterfaceError, OperationalError

    return isinstance(exc, InterfaceError | OperationalError) and not isinstance(exc, IntegrityError)


def resolve_cached(handler: Handler, job, requests: list[Request]) -> list[Request]:
    """Answer from the cache every request already paid for; returns the others (the same key once)."""
    if not requests:
        return []
    calls = cached_calls({r.key for r in requests})
    hits, misses, seen = [], [], set()
    for r in requests:
        if r.key in calls:
            r.call, r.from_cache = calls[r.key], True
            hits.append(r)
        elif r.key in seen:  # the same request twice in one batch: ask once, the other waits for the cache
            release(handler, r.units, not_before=timezone.now() + timedelta(seconds=0.5))
        else:
            seen.add(r.key)
            misses.append(r)
    try:
        store(handler, job, hits, from_cache=True)
    except Exception as exc:
        if _is_outage(exc):
            raise
        keep_answers(handler, job, hits, exc, paid=False)
        release(handler, [u for r in misses for u in r.units])
        raise AnswersNotStored(str(exc)) from exc
    return misses


def key_refused(request: Request) -> str:
    """The job's message when the provider refused the key (401/403): which key, where, and what to do."""
    o = request.outcome
    what = "the key was refused" if o.status == 401 else "the key may not use this model or endpoint"
    said = o.error if len(o.error) <= 160 else o.error[:159] + "…"
    return (f"{o.status}: {what} ({request.endpoint.key_source}): {said} Nothing more is sent; fix "
            f"{request.endpoint.key_source}, then resume.")


def stops_the_job(outcome: gateway.Outcome | None) -> bool:
    """An answer after which nothing more of the job may be sent: a refused key or a request retrying cannot fix."""
    return outcome is not None and not outcome.ok and not outcome.retryable


def fail_requests(handler: Handler, job, failed: list[Request]) -> bool:
    """Retry later, give up on, or stop the job for failed requests. Returns True when the job was stopped: paused
    when the provider refused the key (401/403: the units stay open), failed on any other error that retrying
    cannot fix (an unknown host, a model that does not exist, a request the provider rejects)."""
    stopped = False
    now = timezone.now()
    for r in failed:
        o = r.outcome
        attempts = r.attempts + 1
        base = handler.unit_model.unscoped.filter(pk__in=r.units, status__in=handler.open_statuses)
        if o.status in gateway.KEY_REFUSED:
            base.update(error=o.error[:2000], claimed_by="", claimed_until=None, updated_at=now)
            if not stopped:
                handler.pause_job(job.pk, key_refused(r))
                stopped = True
        elif not o.retryable:
            base.update(status=handler.failed_status, error=o.error[:2000], attempts=attempts, claimed_by="",
                        claimed_until=None, updated_at=now)
            if not stopped:
                handler.fail_job(job.pk, o.error if o.extra.get("cause") == "dns" else
                                 f"The provider refused the request: {o.error}")
                stopped = True
        elif attempts >= r.max_attempts:
            base.update(status=handler.failed_status, error=f"gave up after {attempts} attempts: {o.error}"[:2000],
                        attempts=attempts, claimed_by="", claimed_until=None, updated_at=now)
        else:
            base.update(attempts=attempts, error=o.error[:2000], claimed_by="", claimed_until=None,
                        not_before=now + timedelta(seconds=backoff(attempts, o.retry_after)), updated_at=now)
    return stopped


@dataclass
class Admission:
    admitted: list[Request]
    refused: list[Request] = field(default_factory=list)  # no slot or rate budget now (still claimed)
    deferred_for: float = 0.0  # the limit refused everything: look again after this many seconds
    released: list[Request] = field(default_factory=list)  # given back unsent (their charge is refunded)


def admit(handler: Handler, requests: list[Request], owner: str, *, keep_refused: bool = False) -> Admission:
    """Take slots, rate budget and reservations for requests about to be sent. Requests another engine is sending
    right now are released (retried in a second, when the answer is cached); the others refused are released too,
    or returned still claimed with ``keep_refused`` (the engine keeps them ready to send)."""
    if not requests:
        return Admission([])
    limit = requests[0].limit
    lease = max(r.timeout for r in requests) * 1.5 + 5
    try:
        tokens = limiter.acquire_many(limit.name, limit.concurrency, len(requests), lease, owner)
        n, wait = limiter.take_upto(f"{limit.name}-rpm", limit.requests_per_minute, len(tokens))
        if limit.tokens_per_minute and n:
            each = sum(r.token_estimate for r in requests[:n]) / n
            n, wait = limiter.take_upto(f"{limit.name}-tpm", limit.tokens_per_minute, n, each)
        keep = requests[:n]
        reserved = limiter.reserve([r.key for r in keep if not r.reserved], lease, owner)
        reserved |= {r.key for r in keep if r.reserved}  # reserved when they were prepared
    except limiter.LimiterUnavailable as exc:
        warn_now_and_then("limiter", "%s; waiting", exc)
        if keep_refused:
            return Admission([], refused=list(requests), deferred_for=1.0)
        release(handler, [u for r in requests for u in r.units])
        return Admission([], deferred_for=1.0, released=list(requests))
    admitted, busy = [], []
    for r in keep:
        (admitted if r.key in reserved else busy).append(r)
    for r, token in zip(admitted, tokens, strict=False):
        r.slot, r.reserved = token, True
    with _quiet_limiter():
        limiter.release_many(limit.name, tokens[len(admitted):])
    now = timezone.now()
    # Another engine is sending the same request: its answer will be in the cache in a moment.
    release(handler, [u for r in busy for u in r.units], not_before=now + timedelta(seconds=1))
    rest = requests[n:]
    deferred = 0.0 if admitted else (wait or 0.05)
    if keep_refused:
        return Admission(admitted, refused=rest, deferred_for=wait if rest and wait else deferred, released=busy)
    later = now + timedelta(seconds=wait) if wait else None
    release(handler, [u for r in rest for u in r.units], not_before=later)
    return Admission(admitted, deferred_for=deferred, released=busy + rest)


class _quiet_limiter:
    """Ignore an unreachable limiter while giving slots back (their leases expire anyway)."""

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if kind is not None and issubclass(kind, limiter.LimiterUnavailable):
            warn_now_and_then("limiter-release", "%s; slots are freed when their lease expires", exc)
            return True
        return False


def give_back(requests: list[Request]) -> None:
    """Free the slots and reservations of finished requests (slots already freed are skipped)."""
    by_limit: dict[str, list[str]] = defaultdict(list)
    for r in requests:
        if r.slot:
            by_limit[r.limit.name].append(r.slot)
            r.slot = None
    with _quiet_limiter():
        limiter.give_back(by_limit, [r.key for r in requests if r.reserved])
    for r in requests:
        r.reserved = False


def finish(handler: Handler, job, done: list[Request]) -> set[int]:
    """Store what came back: answers in one transaction, failures as retries or failed units. Answers that cannot
    be applied are kept in the request cache and pause the job (:func:`keep_answers`): never sent again in a loop.
    Only when the database itself is unreachable does this raise (the caller tries again later; the units stay
    claimed until then). Returns the units whose answers were kept but not applied."""
    ok = [r for r in done if r.outcome is not None and r.outcome.ok]
    failed = [r for r in done if r.outcome is None or not r.outcome.ok]
    for r in failed:
        if r.outcome is None:
            r.outcome = gateway.Outcome(ok=False, retryable=True, error="the request was not answered")
    unapplied: set[int] = set()
    try:
        try:
            store(handler, job, ok)
        except Exception as exc:
            if _is_outage(exc):
                raise
            keep_answers(handler, job, ok, exc, paid=True)
            unapplied = {u for r in ok for u in r.units}
        fail_requests(handler, job, failed)
    finally:
        give_back(done)
    note_activity(handler, job.pk)
    return unapplied


_activity: dict[tuple[str, int], float] = {}


def note_activity(handler: Handler, job_id: int, *, every: float = 1.0) -> None:
    """Record that the job made progress (at most once a second per job and process)."""
    now = time.monotonic()
    key = (handler.kind, job_id)
    if now - _activity.get(key, -every) >= every:
        _activity[key] = now
        handler.job_model.unscoped.filter(pk=job_id).update(activity_at=timezone.now())


# ---------------------------------------------------------------------------------------------------------------
# the synchronous path: one cycle for given units (tests, the CLI's small runs, the web's "retry now")
# ---------------------------------------------------------------------------------------------------------------
def process(kind: str, job_id: int, ids: list[int] | None = None, *, limit: int = 256,
            owner: str | None = None, now: bool = False) -> dict[int, str]:
    """Claim (the given or the next) units of a job, send their requests concurrently, store the answers and return
    what happened per unit: done, cached, retry, failed, fatal, busy (claimed elsewhere) or skipped. With ``now``
    the given units are due at once (their retry time is ignored)."""
    handler = handler_for(kind)
    if now and ids:
        handler.open_units(job_id).filter(pk__in=ids).update(not_before=None)
    job = handler.job_model.unscoped.filter(pk=job_id).first()
    if job is None or job.status != handler.running_status:
        if job is not None:
            handler.maybe_finish(job_id)
        return dict.fromkeys(ids or [], "skipped")
    with scoping.in_project(job.project_id):  # the units and their dialogues are the job's project's
        return _process(handler, job, ids, limit=limit, owner=owner)


def _process(handler: Handler, job, ids: list[int] | None, *, limit: int, owner: str | None) -> dict[int, str]:
    job_id = job.pk
    owner = owner or engine_owner()
    ensure_registered(owner)
    units = claim(handler, job, len(ids) if ids is not None else limit, owner, ids=ids)
    states: dict[int, str] = {}
    if ids is not None:
        open_ids = set(handler.open_units(job_id).filter(pk__in=ids).values_list("pk", flat=True))
        states = {i: ("busy" if i in open_ids else "skipped") for i in ids}
    if not units:
        handler.maybe_finish(job_id)
        return states
    try:
        requests = handler.prepare(job, units)
    except gateway.NotConfigured as exc:
        release(handler, [u.pk for u in units])
        handler.fail_job(job_id, str(exc))
        states.update({u.pk: "fatal" for u in units})
        return states
    for unit in units:
        states[unit.pk] = "done"  # units finished by prepare (no request needed)
    try:
        misses = resolve_cached(handler, job, requests)
    except AnswersNotStored:
        states.update({u.pk: "fatal" for u in units})
        return states
    for r in requests:
        if r.from_cache:
            states.update(dict.fromkeys(r.units, "cached"))
    missed = {u for r in misses for u in r.units}
    for r in requests:
        if not r.from_cache and not set(r.units) & missed:
            states.update(dict.fromkeys(r.units, "retry"))  # the same request twice in the batch
    allowed = charge(handler, job, misses)
    for r in misses[len(allowed):]:
        states.update(dict.fromkeys(r.units, "skipped"))
    admitted = _admit_by_limit(handler, job_id, allowed, owner, states)
    _send_all(admitted)
    unapplied = finish(handler, job, admitted)
    for r in admitted:
        o = r.outcome
        state = "done" if o.ok else ("fatal" if not o.retryable else
                                     ("failed" if r.attempts + 1 >= r.max_attempts else "retry"))
        states.update(dict.fromkeys(r.units, state))
    states.update(dict.fromkeys(unapplied, "fatal"))  # answers kept in the cache, the job paused
    handler.maybe_finish(job_id)
    return states


def _admit_by_limit(handler: Handler, job_id: int, requests: list[Request], owner: str,
                    states: dict[int, str]) -> list[Request]:
    """The requests their limits admit now, limit by limit; the charge of the others is refunded and their units
    are to be tried again (``states``)."""
    by_limit: dict[str, list[Request]] = defaultdict(list)
    for r in requests:
        by_limit[r.limit.name].append(r)
    admitted: list[Request] = []
    for group in by_limit.values():
        admission = admit(handler, group, owner)
        admitted += admission.admitted
        refund(handler, job_id, len(group) - len(admission.admitted), endpoint=group[0].endpoint.base_url)
        sent = {u for r in admission.admitted for u in r.units}
        for r in group:
            if not set(r.units) & sent:
                states.update(dict.fromkeys(r.units, "retry"))
    return admitted


def _send_all(requests: list[Request]) -> None:
    """Send the requests at once and wait for every outcome (a client's failure is an outcome to retry)."""
    runner = gateway.runner()
    futures = [(r, runner.submit(gateway.acomplete(r.endpoint, r.payload, r.timeout))) for r in requests]
    for r, future in futures:
        try:
            r.outcome = future.result()
        except Exception as exc:  # a bug in the client must not lose the claim
            r.outcome = gateway.Outcome(ok=False, retryable=True, error=f"{type(exc).__name__}: {exc}")


def retry_in(handler: Handler, ids: list[int]) -> float:
    """Seconds until the units' retry time (rounded up to a tenth; at least half a second)."""
    due = handler.unit_model.unscoped.filter(pk__in=ids).aggregate(at=Max("not_before"))["at"]
    if due is None:
        return 0.5
    return max(0.5, math.ceil((due - timezone.now()).total_seconds() * 10) / 10)


def run_until_idle(kind: str, job_id: int, *, timeout: float = 120.0, ignore_backoff: bool = True) -> list[str]:
    """Process a job synchronously until nothing is left to do (tests and small runs). With ``ignore_backoff``
    retries are due at once."""
    handler = handler_for(kind)
    deadline = time.monotonic() + timeout
    states: list[str] = []
    while time.monotonic() < deadline:
        if ignore_backoff:
            handler.open_units(job_id).filter(not_before__isnull=False).update(not_before=None)
        result = process(kind, job_id)
        states += list(result.values())
        if not result:
            job = handler.job_model.unscoped.get(pk=job_id)
            if job.status != handler.running_status or not handler.open_units(job_id).exists():
                break
            time.sleep(0.05)
    return states


# ---------------------------------------------------------------------------------------------------------------
# engines' identity and heartbeat rows
# ---------------------------------------------------------------------------------------------------------------
_owner: str | None = None
_owner_pid: int | None = None


def engine_owner() -> str:
    """This process's engine id (a forked child gets its own)."""
    global _owner, _owner_pid
    if _owner is None or _owner_pid != os.getpid():
        _owner, _owner_pid = f"{HOSTNAME}:{os.getpid()}:{uuid.uuid4().hex[:8]}", os.getpid()
    return _owner


def ensure_registered(owner: str, *, in_flight: int = 0, jobs: list[str] | None = None) -> bool:
    """Create or refresh this engine's heartbeat row; False when it had to be created (new, or reaped as dead:
    then its claims may be another engine's by now)."""
    updated = LLMWorker.objects.filter(owner=owner).update(seen_at=Now(), in_flight=in_flight,
                                                           **({"jobs": jobs} if jobs is not None else {}))
    if not updated:
        try:
            with transaction.atomic():
                LLMWorker.objects.create(owner=owner, hostname=HOSTNAME, pid=os.getpid(), seen_at=Now(),
                                         started_at=Now(), in_flight=in_flight, jobs=jobs or [])
        except IntegrityError:
            pass
    global _live_cache
    stamp, engines = _live_cache
    if owner not in engines:
        _live_cache = (stamp, engines | {owner})
    return bool(updated)


# ---------------------------------------------------------------------------------------------------------------
# shared by the job kinds
# ---------------------------------------------------------------------------------------------------------------
_STOPPABLE = {"paused": ("running", "queued"), "cancelled": ("running", "queued", "paused")}


def pause_or_cancel(obj, status: str, user, reason: str, *, noun: str, action: str, error: type[Exception]):
    """Move a run or job to paused or cancelled (one conditional UPDATE, so it races with nothing) and record who
    and why; ``error`` is raised when its current status does not allow it. Requests in flight finish and are
    stored; nothing more is sent."""
    from projects.models import AuditEvent

    changed = type(obj).unscoped.filter(pk=obj.pk, status__in=_STOPPABLE[status]).update(
        status=status, finished_at=timezone.now() if status == "cancelled" else None)
    if not changed:
        raise error(f"A {obj.get_status_display().lower()} {noun} cannot be {status}.")
    AuditEvent.record(user, f"{action}.{status}", obj, reason=reason)
    obj.refresh_from_db()
    return obj


def resume(handler: Handler, job, user=None, *, action: str) -> bool:
    """Start a queued job or resume a paused one (its pause reason is cleared) and wake the workers. Returns
    whether it is running now (a job with nothing left to do ends at once)."""
    from projects.models import AuditEvent

    now = timezone.now()
    changed = handler.job_model.unscoped.filter(pk=job.pk, status__in=("queued", "paused")).update(
        status="running", error="", started_at=Coalesce(F("started_at"), Value(now)))
    job.refresh_from_db()
    if job.status != handler.running_status:
        return False
    if changed:
        AuditEvent.record(user, f"{action}.start", job)
    if handler.maybe_finish(job.pk):
        job.refresh_from_db()
        return False
    wake(handler.kind, job.pk)
    return True


def reopened(handler: Handler, job, request_units: int, user=None, *, action: str, **details) -> None:
    """After a coordinator put failed units back to open ("retry"): the job may send their requests again (its
    request limit grows by them x the attempts per unit), runs again, and the workers are woken."""
    from projects.models import AuditEvent

    grow_limit(handler, job, request_units)
    handler.job_model.unscoped.filter(pk=job.pk).exclude(status="cancelled").update(
        status="running", error="", finished_at=None)
    job.refresh_from_db()
    AuditEvent.record(user, f"{action}.retry", job, **details)
    if job.status == handler.running_status:
        wake(handler.kind, job.pk)


def set_caps(handler: Handler, job, *, cost_cap: Decimal | None, token_cap: int | None, user=None,
             action: str) -> None:
    """Set or remove a job's spending caps (recorded with who set them); a job paused by a cap goes on when it is
    resumed under a higher one."""
    from projects.models import AuditEvent

    handler.job_model.unscoped.filter(pk=job.pk).update(cost_cap=cost_cap, token_cap=token_cap)
    AuditEvent.record(user, f"{action}.caps", job, cost_cap=None if cost_cap is None else str(cost_cap),
                      token_cap=token_cap)
    job.refresh_from_db()


def spend(handler: Handler, job) -> dict[str, Any]:
    """What a job sent and spent against its limits, in words for pages, the API and ``--wait``."""
    currency = handler.currency(job)
    config = handler.config(job)
    priced = any(Decimal(str(p)) for p in _prices(config))
    row = handler.job_model.unscoped.filter(pk=job.pk).values(*_ACCOUNT).first() or {  # the counters as they are now
        name: getattr(job, name) for name in _ACCOUNT}
    return {
        "requests_sent": row["requests_sent"], "request_limit": row["request_limit"], "currency": currency,
        "priced": priced, "cost": float(row["spent_cost"]) if priced else None, "tokens": row["spent_tokens"],
        "cost_cap": None if row["cost_cap"] is None else float(row["cost_cap"]), "token_cap": row["token_cap"],
        "cost_text": (_money(row["spent_cost"], currency) if priced else
                      "cost unknown: no prices set for this judge" if handler.kind != "generation" else
                      "cost unknown: no prices set for this job"),
    }


def open_work(job, remaining: int, eta: float | None) -> dict[str, Any]:
    """The open units of a job and when they will be done, for pages, the API and ``--wait``: a running or paused job
    has ``remaining`` units to do and an ETA; an ended one (finished, failed, cancelled) has none -- its open units
    are ``not_done`` and it has no ETA."""
    ended = job.status in job.ENDED
    return {"ended": ended, "remaining": 0 if ended else remaining, "not_done": remaining if ended else 0,
            "eta_seconds": None if ended else eta}


def segments(total: int, done: int, unscored: int, failed: int, *, ended: bool = False,
             done_label: str = "scored") -> list[dict[str, Any]]:
    """The parts of a job's progress bar: answers used (``done_label``), unscored, failed and still open, each with its
    share; an ended job's open units are "not done" (nothing will do them), a running one's "to do"."""
    remaining = max(0, total - done - unscored - failed)
    parts = [("done", done_label, done), ("unscored", "unscored", unscored), ("failed", "failed", failed),
             ("open", "not done" if ended else "to do", remaining)]
    out, offset = [], 0.0
    for kind, label, n in parts:
        if n:
            share = round(100 * n / total, 2)
            out.append({"kind": kind, "label": label, "n": n, "percent": share, "offset": round(offset, 2)})
            offset += share
    return out


def _prices(config: dict) -> list:
    if "prices" in config:  # generation: per side
        return [p for pair in config["prices"].values() for p in pair]
    return [config.get("price_input_per_1k") or 0, config.get("price_output_per_1k") or 0]


# ---------------------------------------------------------------------------------------------------------------
# what the jobs share: a judge configuration's snapshot, and the outcome of a synchronous step
# ---------------------------------------------------------------------------------------------------------------
def config_snapshot(config) -> dict:
    """What a job that asks a judge configuration (a judge run, preference judging) keeps of it when it starts:
    the fields the engine and the job read, frozen, so later edits of the configuration do not change the run."""
    return {
        "name": config.name, "base_url": config.base_url, "api_key_env": config.api_key_env, "model": config.model,
        "temperature": config.temperature, "max_tokens": config.max_tokens, "seed": config.seed, "mode": config.mode,
        "structured_output": config.structured_output, "request_logprobs": config.request_logprobs,
        "concurrency": config.concurrency, "requests_per_minute": config.requests_per_minute,
        "tokens_per_minute": config.tokens_per_minute, "timeout_seconds": config.timeout_seconds,
        "max_attempts": config.max_attempts, "price_input_per_1k": str(config.price_input_per_1k),
        "price_output_per_1k": str(config.price_output_per_1k), "currency": config.currency,
        "prompt_set": config.prompt_set_id,
        "prompt_set_name": str(config.prompt_set), "config_id": config.pk,
    }


@dataclass
class UnitOutcome:
    """The outcome of one synchronous step of a job (tests, commands without workers)."""

    state: str  # done, cached, skipped, busy, retry, failed, fatal (generation: stored, finished as well)
    retry_in: float | None = None
    next: bool = False  # another step of the same unit should follow (a generated dialogue's next turn)


def outcome_of(states: dict[int, str], handler: Handler, ids: list[int]) -> UnitOutcome:
    """The overall outcome of a synchronous step (the worst state of its units) and when a retry is due."""
    found = set(states.values())
    state = next((s for s in ("fatal", "failed", "retry", "busy", "done", "cached", "skipped") if s in found),
                 "skipped")
    return UnitOutcome(state, retry_in=retry_in(handler, ids) if state in ("retry", "busy") else None)
