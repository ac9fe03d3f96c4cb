"""LLM judge runs: requests, caching, and the unit of work a Celery task executes (prompts and parsing are in
scoring.judges.prompts).

A run's state lives in the database. Every (dialogue, item) has a JudgeResult row that is upserted; a unit of
work (one item of one dialogue, or one whole dialogue in per-dialogue mode) is claimed with a lease before its
request is sent, so a redelivered or duplicated task never sends the same request twice while the first is in
flight. Every request is cached by a hash of endpoint, model, messages and parameters, so re-running or resuming
never pays twice. Retries are scheduled by the caller (Celery countdown), never slept here.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from datetime import timedelta

from celery import current_app
from django.db import IntegrityError, transaction
from django.db.models import Count, F, Max, Q, Sum
from django.utils import timezone

from annotation.campaigns import check_target
from annotation.models import AuditEvent, Corpus, Dialogue, Item
from scoring.jobs import services as jobs
from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun, Prompt, PromptSet
from scoring.judges.prompts import (  # noqa: F401 (re-exported: callers import them from here)
    DEFAULT_PROMPT_SET,
    DIALOGUE_TEMPLATE,
    NO,
    PER_DIALOGUE_INSTRUCTION,
    ROLE_NAMES,
    SYSTEM_PROMPT,
    YES,
    build_payload,
    default_prompt_set,
    dialogue_schema,
    item_question,
    p_yes,
    parse_dialogue,
    parse_item,
    render_dialogue,
)
from scoring.llm import gateway, limiter
from scoring.llm.models import LLMCall


def lease_seconds(config: dict) -> float:
    """How long a claimed unit stays reserved: longer than one request can take, so only a dead worker's
    claims expire (and are then picked up again)."""
    return float(config["timeout_seconds"]) * 1.5 + 5


# ---------------------------------------------------------------------------------------------------------------
# runs
# ---------------------------------------------------------------------------------------------------------------
def config_snapshot(config: JudgeConfig) -> dict:
    return {
        "name": config.name, "base_url": config.base_url, "api_key_env": config.api_key_env, "model": config.model,
        "temperature": config.temperature, "max_tokens": config.max_tokens, "seed": config.seed, "mode": config.mode,
        "structured_output": config.structured_output, "request_logprobs": config.request_logprobs,
        "concurrency": config.concurrency, "requests_per_minute": config.requests_per_minute,
        "tokens_per_minute": config.tokens_per_minute, "timeout_seconds": config.timeout_seconds,
        "max_attempts": config.max_attempts, "price_input_per_1k": str(config.price_input_per_1k),
        "price_output_per_1k": str(config.price_output_per_1k), "prompt_set": config.prompt_set_id,
        "prompt_set_name": str(config.prompt_set), "config_id": config.pk,
    }


def run_dialogues(run: JudgeRun):
    qs = run.corpus.dialogues.alive().exclude(privacy_status="excluded")
    if run.filter_split:
        qs = qs.filter(split=run.filter_split)
    if run.filter_model:
        qs = qs.filter(source_model=run.filter_model)
    if run.filter_language:
        qs = qs.filter(language=run.filter_language)
    return qs


def run_items(run: JudgeRun) -> list[Item]:
    prompt_set = PromptSet.objects.get(pk=run.snapshot["prompt_set"])
    items = list(prompt_set.scale_version.rating_items().prefetch_related("levels").order_by("order"))
    if run.item_codes:
        items = [i for i in items if i.code in run.item_codes]
    return items


class RunError(ValueError):
    """A run that cannot start; the message says why."""


@transaction.atomic
def create_run(config: JudgeConfig, corpus: Corpus, *, user=None, item_codes: list[str] | None = None,
               filter_split: str = "", filter_model: str = "", filter_language: str = "") -> JudgeRun:
    """Create a run with one pending result per (dialogue, item); ``start`` enqueues the work."""
    gateway.resolve_endpoint(config.base_url, config.api_key_env)  # NotConfigured says how to configure
    check_target(config.prompt_set.scale_version, corpus, RunError)
    codes = set(config.prompt_set.scale_version.rating_items().values_list("code", flat=True))
    unknown = sorted(set(item_codes or []) - codes)
    if unknown:
        raise RunError(f"Unknown item code(s) {', '.join(unknown)}; the scale has {', '.join(sorted(codes))}.")
    run = JudgeRun.objects.create(config=config, corpus=corpus, item_codes=list(item_codes or []),
                                  snapshot=config_snapshot(config), created_by=user, filter_split=filter_split,
                                  filter_model=filter_model, filter_language=filter_language)
    items = run_items(run)
    dialogue_ids = list(run_dialogues(run).values_list("pk", flat=True))
    if not dialogue_ids or not items:
        raise RunError("No dialogues (or no items) in scope for this run.")
    JudgeResult.objects.bulk_create(
        [JudgeResult(run=run, dialogue_id=d, item=item) for d in dialogue_ids for item in items], batch_size=5000)
    PromptSet.objects.filter(pk=config.prompt_set_id, locked_at__isnull=True).update(locked_at=timezone.now())
    AuditEvent.record(user, "judge_run.create", run, units=len(dialogue_ids) * len(items))
    return run


def start(run: JudgeRun, user=None) -> int:
    """Mark the run running and enqueue every pending unit (idempotent: also resumes a paused run)."""
    JudgeRun.objects.filter(pk=run.pk, status__in=[JudgeRun.Status.QUEUED, JudgeRun.Status.PAUSED]).update(
        status=JudgeRun.Status.RUNNING, started_at=timezone.now())
    run.refresh_from_db()
    if run.status != JudgeRun.Status.RUNNING:
        return 0
    AuditEvent.record(user, "judge_run.start", run)
    sent = 0

    def send_uncached(units: list[tuple[int, int | None]]) -> None:
        nonlocal sent
        sent += _send_units(run, units)

    # Units go out batch by batch as the cache is checked, so the workers start within a moment, not after
    # thousands of prompts were built and hashed.
    resolve_cached(run, on_uncached=send_uncached)
    maybe_finish(run.pk)
    return sent


def enqueue_pending(run: JudgeRun) -> int:
    """Send a task for every pending unit. Duplicates are harmless: a unit is claimed before its call."""

    pending = JudgeResult.objects.filter(run=run, status=JudgeResult.Status.PENDING)
    if run.snapshot["mode"] == JudgeConfig.Mode.PER_DIALOGUE:
        units = [(d, None) for d in pending.values_list("dialogue_id", flat=True).distinct().order_by("dialogue_id")]
    else:
        units = list(pending.order_by("dialogue_id", "item__order").values_list("dialogue_id", "item_id"))

    return _send_units(run, units)


def _send_units(run: JudgeRun, units: list[tuple[int, int | None]]) -> int:
    """Queue one task per unit once the current transaction commits."""
    def send():
        # One producer (one broker connection) for all messages: thousands of units go out in a moment.
        with current_app.producer_or_acquire() as producer:
            for dialogue_id, item_id in units:
                current_app.send_task("scoring.judge_unit", (run.pk, dialogue_id, item_id), producer=producer)

    if units:
        transaction.on_commit(send)
    return len(units)


def set_status(run: JudgeRun, status: str, user=None, reason: str = "") -> JudgeRun:
    return jobs.pause_or_cancel(run, status, user, reason, noun="run", action="judge_run", error=RunError)


def retry_failed(run: JudgeRun, user=None) -> int:
    """Put failed and unscored results back to pending and resume the run."""
    count = JudgeResult.objects.filter(run=run, status__in=[JudgeResult.Status.FAILED, JudgeResult.Status.UNSCORED]
                                       ).update(status=JudgeResult.Status.PENDING, attempts=0, error="",
                                                claimed_until=None, retry_round=F("retry_round") + 1)
    JudgeRun.objects.filter(pk=run.pk).exclude(status=JudgeRun.Status.CANCELLED).update(
        status=JudgeRun.Status.RUNNING, error="", finished_at=None)
    run.refresh_from_db()
    AuditEvent.record(user, "judge_run.retry", run, results=count)
    enqueue_pending(run)
    return count


def maybe_finish(run_id: int) -> bool:
    """Finish the run from database state once no result is pending (no chords needed)."""
    if JudgeResult.objects.filter(run_id=run_id, status=JudgeResult.Status.PENDING).exists():
        return False
    return bool(JudgeRun.objects.filter(pk=run_id, status=JudgeRun.Status.RUNNING).update(
        status=JudgeRun.Status.SUCCEEDED, finished_at=timezone.now()))


def fail_run(run_id: int, message: str) -> None:
    JudgeRun.objects.filter(pk=run_id, status__in=JudgeRun.ACTIVE).update(
        status=JudgeRun.Status.FAILED, error=message[:2000], finished_at=timezone.now())


# ---------------------------------------------------------------------------------------------------------------
# one unit of work
# ---------------------------------------------------------------------------------------------------------------
@dataclass
class UnitOutcome:
    state: str  # done, cached, skipped, busy, retry, failed, fatal
    retry_in: float | None = None


def backoff(attempt: int, retry_after: float | None = None) -> float:
    """Exponential backoff with jitter, at least what the provider asked for in Retry-After."""
    delay = min(60.0, 1.0 * (2 ** max(0, attempt - 1))) * random.uniform(0.5, 1.5)
    return max(delay, retry_after or 0.0)


def _claim(results: list[JudgeResult], seconds: float) -> bool:
    now = timezone.now()
    ids = [r.pk for r in results]
    claimed = (JudgeResult.objects.filter(pk__in=ids, status=JudgeResult.Status.PENDING)
               .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
               .update(claimed_until=now + timedelta(seconds=seconds)))
    return claimed == len(ids)


def _unclaim(results: list[JudgeResult]) -> None:
    JudgeResult.objects.filter(pk__in=[r.pk for r in results]).update(claimed_until=None)


def _store_call(key: str, endpoint: str, payload: dict, outcome: gateway.Outcome, config: dict) -> LLMCall:
    from decimal import Decimal

    price_in, price_out = Decimal(config["price_input_per_1k"]), Decimal(config["price_output_per_1k"])
    try:
        with transaction.atomic():
            return LLMCall.objects.create(
                key=key, endpoint=endpoint, model=payload["model"], request=payload, response=outcome.response,
                content=outcome.content, prompt_tokens=outcome.prompt_tokens,
                completion_tokens=outcome.completion_tokens, latency_ms=outcome.latency_ms,
                cost=gateway.cost(outcome.prompt_tokens, outcome.completion_tokens, price_in, price_out))
    except IntegrityError:  # the same request answered meanwhile by another worker: keep the first
        return LLMCall.objects.get(key=key)


RESULT_FIELDS = ["value", "p_yes", "rationale", "status", "error", "call", "from_cache", "claimed_until",
                 "updated_at"]


def _fill(call: LLMCall, results: list[JudgeResult], items: dict[int, Item], mode: str, from_cache: bool) -> None:
    """Parse the answer into the result objects (not saved)."""
    now = timezone.now()
    if mode == JudgeConfig.Mode.PER_ITEM:
        result = results[0]
        value, rationale = parse_item(call.content, items[result.item_id])
        result.value, result.rationale = value, rationale
        result.p_yes = p_yes(call.response) if items[result.item_id].response_type == "binary" else None
        result.status = JudgeResult.Status.DONE if value is not None else JudgeResult.Status.UNSCORED
        result.error = "" if value is not None else "The answer could not be parsed as a verdict."
    else:
        parsed = parse_dialogue(call.content, [items[r.item_id] for r in results])
        for result in results:
            value = None if parsed is None else parsed.get(items[result.item_id].code)
            result.value, result.p_yes, result.rationale = value, None, ""
            result.status = JudgeResult.Status.DONE if value is not None else JudgeResult.Status.UNSCORED
            result.error = "" if value is not None else "The answer is not valid JSON for the item schema."
    for result in results:
        result.call, result.from_cache, result.claimed_until, result.updated_at = call, from_cache, None, now


def _apply(call: LLMCall, results: list[JudgeResult], items: dict[int, Item], mode: str, from_cache: bool) -> None:
    _fill(call, results, items, mode, from_cache)
    if len(results) == 1:
        JudgeResult.objects.filter(pk=results[0].pk).update(**{f: getattr(results[0], f) for f in RESULT_FIELDS})
    else:
        JudgeResult.objects.bulk_update(results, RESULT_FIELDS)


def resolve_cached(run: JudgeRun, batch: int = 500, on_uncached=None) -> int:
    """Answer every pending unit whose request is already cached, in bulk: a re-run of the same requests makes
    no call and finishes in seconds. ``on_uncached`` receives, batch by batch, the units (dialogue id, item id
    or None) that need a call; the first batch is small so that work can start at once."""
    context = run_context(run)
    mode = context.config["mode"]
    pending = list(JudgeResult.objects.filter(run=run, status=JudgeResult.Status.PENDING).order_by("dialogue_id"))
    units: dict[tuple, list[JudgeResult]] = {}
    for result in pending:
        key = (result.dialogue_id,) if mode == JudgeConfig.Mode.PER_DIALOGUE else (result.dialogue_id, result.item_id)
        units.setdefault(key, []).append(result)
    resolved = 0
    unit_list = list(units.items())
    bounds = [0, min(32, batch)] + list(range(min(32, batch) + batch, len(unit_list) + batch, batch))
    for start_at, end_at in itertools.pairwise(bounds):
        chunk = unit_list[start_at:end_at]
        if not chunk:
            break
        dialogues = Dialogue.objects.prefetch_related("redactions").in_bulk({k[0] for k, _ in chunk})
        unit_keys: list[tuple[tuple, str, list[JudgeResult]]] = []
        for unit, results in chunk:
            try:
                _, _, key = unit_request(context, dialogues[unit[0]], [r.item_id for r in results],
                                         max(r.retry_round for r in results))
            except gateway.NotConfigured:
                return resolved
            unit_keys.append((unit, key, results))
        calls = LLMCall.objects.in_bulk({key for _, key, _ in unit_keys}, field_name="key")
        changed = []
        for _, key, results in unit_keys:
            if key in calls:
                _fill(calls[key], results, context.items, mode, from_cache=True)
                changed += results
        JudgeResult.objects.bulk_update(changed, RESULT_FIELDS, batch_size=500)
        resolved += len(changed)
        if on_uncached is not None:
            on_uncached([(unit[0], None if mode == JudgeConfig.Mode.PER_DIALOGUE else unit[1])
                         for unit, key, _ in unit_keys if key not in calls])
    return resolved


@dataclass
class RunContext:
    """What every unit of a run shares; immutable once the run started (snapshot, locked prompt set)."""

    config: dict
    prompt_set: PromptSet
    items: dict[int, Item]
    questions: dict[int, str]


_contexts: dict[int, RunContext] = {}


def run_context(run: JudgeRun) -> RunContext:
    context = _contexts.get(run.pk)
    if context is None:
        prompt_set = PromptSet.objects.get(pk=run.snapshot["prompt_set"])
        items = {i.pk: i for i in Item.objects.filter(version_id=prompt_set.scale_version_id,
                                                      response_type__in=Item.SCORED_TYPES)
                 .prefetch_related("levels")}
        questions = dict(Prompt.objects.filter(prompt_set=prompt_set).values_list("item_id", "question"))
        context = RunContext(config=run.snapshot, prompt_set=prompt_set, items=items, questions=questions)
        if len(_contexts) > 64:
            _contexts.clear()
        _contexts[run.pk] = context
    return context


def unit_request(context: RunContext, dialogue: Dialogue, item_ids: list[int], retry_round: int = 0
                 ) -> tuple[gateway.Endpoint, dict, str]:
    """Endpoint, payload and cache key of one unit."""
    config = context.config
    endpoint = gateway.resolve_endpoint(config["base_url"], config["api_key_env"])
    payload = build_payload(config, context.prompt_set, dialogue, [context.items[i] for i in item_ids],
                            context.questions)
    key = gateway.request_key(endpoint.base_url, payload)
    if retry_round:  # an explicit retry of an unscored/failed answer asks again: a cache entry of its own
        key = gateway.request_key(endpoint.base_url, {**payload, "_retry_round": retry_round})
    return endpoint, payload, key


def process_unit(run_id: int, dialogue_id: int, item_id: int | None) -> UnitOutcome:
    """Judge one unit. Returns what happened; ``retry_in`` asks the caller to schedule a retry."""
    qs = JudgeResult.objects.filter(run_id=run_id, run__status=JudgeRun.Status.RUNNING, dialogue_id=dialogue_id,
                                    status=JudgeResult.Status.PENDING).select_related("run")
    if item_id is not None:
        qs = qs.filter(item_id=item_id)
    results = list(qs.order_by("item_id"))
    if not results:  # done already, or the run is paused, cancelled or failed
        maybe_finish(run_id)
        return UnitOutcome("skipped")
    run = results[0].run
    config = run.snapshot
    lease = lease_seconds(config)
    if not _claim(results, lease):
        # Another task holds it. If that worker died, its claim expires: look again just after that.
        until = JudgeResult.objects.filter(pk__in=[r.pk for r in results]).aggregate(
            until=Max("claimed_until"))["until"]
        wait = (until - timezone.now()).total_seconds() + 0.5 if until else 0.5
        return UnitOutcome("busy", retry_in=max(0.5, wait))
    context = run_context(run)
    items = context.items
    dialogue = Dialogue.objects.prefetch_related("redactions").get(pk=dialogue_id)
    try:
        endpoint, payload, key = unit_request(context, dialogue, [r.item_id for r in results],
                                              max(r.retry_round for r in results))
    except gateway.NotConfigured as exc:
        _unclaim(results)
        fail_run(run_id, str(exc))
        return UnitOutcome("fatal")
    cached = LLMCall.objects.filter(key=key).first()
    if cached is not None:
        _apply(cached, results, items, config["mode"], from_cache=True)
        maybe_finish(run_id)
        return UnitOutcome("cached")
    limit_name = f"judge-{config['config_id']}"
    slot = limiter.acquire_waiting(limit_name, config["concurrency"], lease, wait_seconds=5.0)
    if slot is None:
        _unclaim(results)
        return UnitOutcome("retry", retry_in=random.uniform(0.05, 0.3))
    try:
        wait = limiter.take(f"{limit_name}-rpm", config.get("requests_per_minute"))
        if not wait and config.get("tokens_per_minute"):
            estimate = sum(len(m["content"]) for m in payload["messages"]) / 3 + config["max_tokens"]
            wait = limiter.take(f"{limit_name}-tpm", config["tokens_per_minute"], estimate)
        if wait:
            _unclaim(results)
            return UnitOutcome("retry", retry_in=wait + random.uniform(0, 0.2))
        outcome = gateway.complete(endpoint, payload, float(config["timeout_seconds"]))
    finally:
        limiter.release(slot)
    if outcome.ok:
        with transaction.atomic():  # a worker killed in between must not leave a paid call counted as cached
            call = _store_call(key, endpoint.base_url, payload, outcome, config)
            _apply(call, results, items, config["mode"], from_cache=False)
        maybe_finish(run_id)
        return UnitOutcome("done")
    attempts = results[0].attempts + 1
    if not outcome.retryable:
        JudgeResult.objects.filter(pk__in=[r.pk for r in results]).update(
            status=JudgeResult.Status.FAILED, error=outcome.error[:2000], attempts=attempts, claimed_until=None)
        fail_run(run_id, f"The provider refused the request: {outcome.error}")
        return UnitOutcome("fatal")
    if attempts >= int(config["max_attempts"]):
        JudgeResult.objects.filter(pk__in=[r.pk for r in results]).update(
            status=JudgeResult.Status.FAILED, error=f"gave up after {attempts} attempts: {outcome.error}"[:2000],
            attempts=attempts, claimed_until=None)
        maybe_finish(run_id)
        return UnitOutcome("failed")
    JudgeResult.objects.filter(pk__in=[r.pk for r in results]).update(
        attempts=attempts, error=outcome.error[:2000], claimed_until=None)
    return UnitOutcome("retry", retry_in=backoff(attempts, outcome.retry_after))


# ---------------------------------------------------------------------------------------------------------------
# progress
# ---------------------------------------------------------------------------------------------------------------
def progress(run: JudgeRun) -> dict:
    """Counts, tokens, cost, rate and ETA for the run page and the CLI."""
    counts = dict(JudgeResult.objects.filter(run=run).values_list("status").annotate(n=Count("id")))
    cached = JudgeResult.objects.filter(run=run, from_cache=True).exclude(status=JudgeResult.Status.PENDING).count()
    total = sum(counts.values())
    done = counts.get("done", 0)
    unscored = counts.get("unscored", 0)
    failed = counts.get("failed", 0)
    remaining = counts.get("pending", 0)
    calls = (LLMCall.objects.filter(results__run=run, results__from_cache=False).distinct()
             .aggregate(n=Count("id"), pt=Sum("prompt_tokens"), ct=Sum("completion_tokens"), cost=Sum("cost")))
    elapsed = None
    rate = None
    eta = None
    if run.started_at:
        end = run.finished_at or timezone.now()
        elapsed = max(0.001, (end - run.started_at).total_seconds())
        finished_units = total - remaining
        rate = (calls["n"] or 0) / elapsed
        unit_rate = finished_units / elapsed if finished_units else 0
        eta = remaining / unit_rate if unit_rate and remaining else (0 if not remaining else None)
    return {
        "total": total, "done": done, "cached": cached, "unscored": unscored, "failed": failed,
        "remaining": remaining, "percent": round(100 * (total - remaining) / total, 1) if total else 0.0,
        "calls": calls["n"] or 0, "prompt_tokens": calls["pt"] or 0, "completion_tokens": calls["ct"] or 0,
        "cost": float(calls["cost"] or 0), "elapsed_seconds": elapsed, "calls_per_second": rate, "eta_seconds": eta,
        "status": run.status, "error": run.error,
    }
