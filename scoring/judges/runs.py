"""LLM judge runs: requests, caching, and the judge's handler on the LLM engine (prompts and parsing are in
scoring.judges.prompts).

A run's state lives in the database. Every (dialogue, item) has a JudgeResult row; a unit of work (one item of one
dialogue, or every item of a dialogue in per-dialogue mode) is claimed by an engine before its request is sent and
answered in one transaction with the call record (scoring.llm.engine). Every request is cached by a hash of
endpoint, model, messages and parameters, so re-running or resuming never pays twice.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.core.cache import cache
from django.db import transaction
from django.db.models import Avg, Count, F, Sum
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.utils import timezone
from django.utils.translation import gettext

from annotation.campaigns import check_target
from annotation.models import Corpus, Dialogue, Item, Redaction
from projects.models import AuditEvent
from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun, Prompt, PromptSet
from scoring.judges.prompts import (  # noqa: F401 (re-exported: callers import them from here)
    DEFAULT_PROMPT_SET,
    DIALOGUE_TEMPLATE,
    NO,
    PER_DIALOGUE_INSTRUCTION,
    ROLE_NAMES,
    SYSTEM_PROMPT,
    YES,
    answer_uncertainty,
    build_payload,
    default_prompt_set,
    dialogue_schema,
    draws_snapshot,
    draws_uncertainty,
    item_question,
    p_yes,
    parse_answer,
    parse_dialogue,
    parse_item,
    render_dialogue,
)
from scoring.llm import batch, delivery, engine, gateway
from scoring.llm.engine import UnitOutcome, config_snapshot, outcome_of
from scoring.llm.models import LLMCall


# ---------------------------------------------------------------------------------------------------------------
# runs
# ---------------------------------------------------------------------------------------------------------------
# ---------------------------------------------------------------------------------------------------------------
# runs
# ---------------------------------------------------------------------------------------------------------------
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


def _check_items(config: JudgeConfig, item_codes: list[str] | None) -> None:
    codes = set(config.prompt_set.scale_version.rating_items().values_list("code", flat=True))
    unknown = sorted(set(item_codes or []) - codes)
    if unknown:
        raise RunError(gettext("Unknown item code(s) %(unknown)s; the scale has %(codes)s.")
                       % {"unknown": ", ".join(unknown), "codes": ", ".join(sorted(codes))})


@transaction.atomic
def create_run(config: JudgeConfig, corpus: Corpus, *, user=None, item_codes: list[str] | None = None,
               filter_split: str = "", filter_model: str = "", filter_language: str = "",
               batch: bool = False, cost_cap: Decimal | None = None, token_cap: int | None = None) -> JudgeRun:
    """Create a run with one pending result per (dialogue, item), written by the database in one statement (a
    run of 250,000 units is created in seconds); ``start`` wakes the workers."""
    if config.project_id != corpus.project_id:
        raise RunError(gettext("The judge and the corpus belong to different projects: a run uses a judge and a "
                               "corpus of one project."))
    gateway.usable_endpoint(config.base_url, config.api_key_env)  # NotConfigured says why nothing can be sent
    _check_items(config, item_codes)
    check_target(config.prompt_set.scale_version, corpus, RunError)
    run = JudgeRun.objects.create(project_id=corpus.project_id, config=config, corpus=corpus,
                                  item_codes=list(item_codes or []),
                                  snapshot={**config_snapshot(config), **draws_snapshot(config),
                                            "batch": bool(batch)}, created_by=user,
                                  filter_split=filter_split, filter_model=filter_model,
                                  filter_language=filter_language, batch=bool(batch), cost_cap=cost_cap,
                                  token_cap=token_cap)
    item_ids = [item.pk for item in run_items(run)]
    dialogues = run_dialogues(run).order_by("pk")
    if not item_ids or not dialogues.exists():
        raise RunError(gettext("No dialogues (or no items) in scope for this run."))
    units = _insert_units(run, dialogues, item_ids)
    PromptSet.objects.filter(pk=config.prompt_set_id, locked_at__isnull=True).update(locked_at=timezone.now())
    AuditEvent.record(user, "judge_run.create", run, units=units)
    return run


def _insert_units(run: JudgeRun, dialogues, item_ids: list[int]) -> int:
    """INSERT ... SELECT of every (dialogue, item) pair, in dialogue then item order (so the requests of one
    dialogue go out together and providers can reuse the cached prompt prefix)."""
    from django.db import connection

    item_table = Item._meta.db_table
    result_table = JudgeResult._meta.db_table
    dialogue_sql, dialogue_params = dialogues.values_list("pk", flat=True).order_by().query.sql_with_params()
    placeholders = ", ".join(["%s"] * len(item_ids))
    sql = (f"INSERT INTO {result_table} (run_id, dialogue_id, item_id, status, attempts, retry_round, error, "
           f"rationale, from_cache, claimed_by, updated_at) "
           f"SELECT %s, d.pk, i.id, 'pending', 0, 0, '', '', %s, '', %s "
           f"FROM ({dialogue_sql}) d CROSS JOIN {item_table} i WHERE i.id IN ({placeholders}) "
           f"ORDER BY d.pk, i.{connection.ops.quote_name('order')}, i.id")
    with connection.cursor() as cursor:
        cursor.execute(sql, [run.pk, False, timezone.now(), *dialogue_params, *item_ids])
        return cursor.rowcount


def _not_imported(run: JudgeRun) -> None:
    """Imported scores are never sent to an endpoint: nothing to start, pause, resume or retry."""
    if run.is_imported:
        raise RunError(gettext("Run #%(pk)s holds imported scores (%(file)s); it is never sent to an endpoint.")
                       % {"pk": run.pk, "file": run.source_file})


def start(run: JudgeRun, user=None) -> int:
    """Mark the run running and wake the workers (also resumes a paused run). Returns the units to do."""
    _not_imported(run)
    if not engine.resume(HANDLER, run, user, action="judge_run"):
        return 0
    return JudgeResult.objects.filter(run=run, status=JudgeResult.Status.PENDING).count()


def set_status(run: JudgeRun, status: str, user=None, reason: str = "") -> JudgeRun:
    _not_imported(run)
    run = engine.pause_or_cancel(run, status, user, reason, noun="run", action="judge_run", error=RunError)
    if status == JudgeRun.Status.CANCELLED and run.batch:
        batch.cancel_open(HANDLER, run.pk)
    return run


def retry_failed(run: JudgeRun, user=None) -> int:
    """Put failed and unscored results back to pending (asking the endpoint again) and resume the run; the run
    may send their requests again (its request limit grows by them)."""
    _not_imported(run)
    if run.status == JudgeRun.Status.CANCELLED:
        raise RunError(gettext("A cancelled run cannot be retried."))
    problems = JudgeResult.objects.filter(run=run, status__in=[JudgeResult.Status.FAILED,
                                                                JudgeResult.Status.UNSCORED])
    requests = HANDLER.requests_of(run, problems)
    count = problems.update(status=JudgeResult.Status.PENDING, attempts=0, error="", claimed_by="",
                            claimed_until=None, not_before=None, retry_round=F("retry_round") + 1)
    engine.reopened(HANDLER, run, requests, user, action="judge_run", results=count)
    return count


def maybe_finish(run_id: int) -> bool:
    return HANDLER.maybe_finish(run_id)


def fail_run(run_id: int, message: str) -> None:
    HANDLER.fail_job(run_id, message)


# ---------------------------------------------------------------------------------------------------------------
# judge runs on the engine
# ---------------------------------------------------------------------------------------------------------------
@dataclass
class RunContext:
    """What every unit of a run shares; immutable once the run started (snapshot, locked prompt set)."""

    config: dict
    prompt_set: PromptSet
    items: dict[int, Item]
    questions: dict[int, str]
    limit: engine.Limit
    prices: tuple[Decimal, Decimal]
    judge_keys: dict[str, str] = field(default_factory=dict)  # the instrument's keys for a judge's own format


_contexts: dict[int, RunContext] = {}


def run_context(run: JudgeRun) -> RunContext:
    context = _contexts.get(run.pk)
    if context is None:
        config = run.snapshot
        prompt_set = PromptSet.objects.get(pk=config["prompt_set"])
        items = {i.pk: i for i in Item.objects.filter(version_id=prompt_set.scale_version_id,
                                                      response_type__in=Item.SCORED_TYPES).prefetch_related("levels")}
        questions = dict(Prompt.objects.filter(prompt_set=prompt_set).values_list("item_id", "question"))
        price_in, price_out = Decimal(config["price_input_per_1k"]), Decimal(config["price_output_per_1k"])
        if config.get("batch"):
            price_in, price_out = price_in * BATCH_DISCOUNT, price_out * BATCH_DISCOUNT
        context = RunContext(
            config=config, prompt_set=prompt_set, items=items, questions=questions,
            limit=engine.endpoint_limit(gateway.resolve_endpoint(config["base_url"], config["api_key_env"]), config),
            prices=(price_in, price_out), judge_keys=dict(prompt_set.scale_version.judge_keys or {}))
        if len(_contexts) > 64:
            _contexts.clear()
        _contexts[run.pk] = context
    return context


# The Batch API costs half the price of live requests (OpenAI's published discount).
BATCH_DISCOUNT = Decimal("0.5")


# Dialogues as the prompts show them, kept per process: a run asks about each dialogue once per item, and loading
# it (turns and redactions) each time costs more than the rest of a request. Any saved redaction or dialogue bumps
# a version in the shared cache, which empties this one; entries also expire after a minute.
_dialogue_cache: dict[int, tuple[float, int, Dialogue]] = {}
DIALOGUE_CACHE_SECONDS = 60.0
DIALOGUE_CACHE_SIZE = 5000
VERSION_KEY = "minicex:dialogue-text-version"


_version_seen = [0.0, 0]  # when the shared version was last read, and its value


def cached_dialogues(ids: set[int]) -> dict[int, Dialogue]:
    now = time.monotonic()
    if now - _version_seen[0] > 1.0:  # a changed dialogue reaches the prompts within a second
        _version_seen[:] = [now, cache.get(VERSION_KEY, 0)]
    version = _version_seen[1]
    missing = [d for d in ids if d not in _dialogue_cache or _dialogue_cache[d][1] != version
               or now - _dialogue_cache[d][0] > DIALOGUE_CACHE_SECONDS]
    if missing:
        if len(_dialogue_cache) > DIALOGUE_CACHE_SIZE:
            _dialogue_cache.clear()
        for dialogue in Dialogue.objects.prefetch_related("redactions").filter(pk__in=missing):
            _dialogue_cache[dialogue.pk] = (now, version, dialogue)
    return {d: _dialogue_cache[d][2] for d in ids if d in _dialogue_cache}


@receiver([post_save, post_delete], sender=Redaction)
@receiver([post_save, post_delete], sender=Dialogue)
def _dialogue_text_changed(sender, **kwargs) -> None:
    """A redaction (or a dialogue) changed: the next requests are built from the text as it is now."""
    try:
        cache.incr(VERSION_KEY)
    except ValueError:
        cache.set(VERSION_KEY, 1, None)
    _version_seen[0] = 0.0  # this process reads it again at once


class JudgeHandler(engine.Handler):
    kind = "judge"
    job_model = JudgeRun
    unit_model = JudgeResult
    job_field = "run"

    def finished(self, job: JudgeRun) -> None:
        """The run's reports against the comparable campaigns are computed now, not when someone opens them."""
        from core.jobs.precompute import on_judge_run_finished

        on_judge_run_finished(job)
    active_statuses = JudgeRun.ACTIVE
    applies_conditionally = True
    claim_columns = ("id", "run", "dialogue", "item", "attempts", "retry_round")

    def requests_of(self, run: JudgeRun, results) -> int:
        """How many requests these results need: one per result, or one per dialogue in per-dialogue mode."""
        if run.snapshot["mode"] == JudgeConfig.Mode.PER_DIALOGUE:
            return results.order_by().values("dialogue_id").distinct().count()
        return results.count()

    def request_units(self, run: JudgeRun) -> int:
        return self.requests_of(run, self.open_units(run.pk))

    def claim_columns_for(self, run: JudgeRun) -> tuple[str, ...]:
        # Per-dialogue units are groups (every pending item of a dialogue): claimed under the run's lock instead.
        return () if run.snapshot["mode"] == JudgeConfig.Mode.PER_DIALOGUE else self.claim_columns

    def pick(self, run: JudgeRun, claimable, n: int) -> list[int]:
        if run.snapshot["mode"] == JudgeConfig.Mode.PER_DIALOGUE:
            # A unit is every pending item of a dialogue: claim whole dialogues.
            dialogue_ids = list(claimable.order_by("dialogue_id").values_list("dialogue_id", flat=True)
                                .distinct()[:max(1, n)])
            return list(claimable.filter(dialogue_id__in=dialogue_ids).values_list("pk", flat=True))
        return list(claimable.order_by("pk").values_list("pk", flat=True)[:n])

    def load(self, ids: list[int]) -> list[JudgeResult]:
        return list(JudgeResult.objects.filter(pk__in=ids).only(
            "pk", "run_id", "dialogue_id", "item_id", "attempts", "retry_round").order_by("dialogue_id", "pk"))

    def prepare(self, run: JudgeRun, units: list[JudgeResult]) -> list[engine.Request]:
        _not_imported(run)  # never reached (imported runs are finished when created); no request may be built
        context = run_context(run)
        config = context.config
        endpoint = gateway.resolve_endpoint(config["base_url"], config["api_key_env"])
        per_dialogue = config["mode"] == JudgeConfig.Mode.PER_DIALOGUE
        groups: dict[tuple, list[JudgeResult]] = {}
        for unit in units:
            groups.setdefault((unit.dialogue_id,) if per_dialogue else (unit.pk,), []).append(unit)
        dialogues = cached_dialogues({u.dialogue_id for u in units})
        timeout = float(config["timeout_seconds"])
        requests = []
        for members in groups.values():
            items = [context.items[u.item_id] for u in members]
            payload = build_payload(config, context.prompt_set, dialogues[members[0].dialogue_id], items,
                                    context.questions)
            retry_round = max(u.retry_round for u in members)
            key = gateway.request_key(endpoint.base_url, payload if not retry_round else
                                      {**payload, "_retry_round": retry_round}, project=run.project_id)
            requests.append(engine.Request(
                units=[u.pk for u in members], endpoint=endpoint, payload=payload, key=key, limit=context.limit,
                timeout=timeout, prices=context.prices, attempts=max(u.attempts for u in members),
                max_attempts=int(config["max_attempts"]), data=[u.item_id for u in members]))
        return requests

    def apply(self, run: JudgeRun, requests: list[engine.Request], open_ids: set[int]) -> None:
        context = run_context(run)
        per_item = context.config["mode"] == JudgeConfig.Mode.PER_ITEM
        now = timezone.now()
        rows = []
        for r in requests:
            members = [(pk, item_id) for pk, item_id in zip(r.units, r.data, strict=True) if pk in open_ids]
            if not members:
                continue
            content, call_id = r.call.content, r.call.pk
            if per_item:
                pk, item_id = members[0]
                item = context.items[item_id]
                value, rationale = parse_item(content, item)
                probability = p_yes(r.call.response) if item.response_type == Item.ResponseType.BINARY else None
                spread = (draws_uncertainty(r.call.response, item, value) if context.config.get("draws", 1) > 1
                          else answer_uncertainty(r.call.response, item, value))
                rows.append((pk, [value, probability, spread, rationale,
                                  DONE if value is not None else UNSCORED,
                                  "" if value is not None else "The answer could not be parsed as a verdict.",
                                  call_id, r.from_cache, now]))
                continue
            parsed, reason = parse_answer(content, [context.items[item_id] for item_id in r.data],
                                          context.judge_keys)
            for pk, item_id in members:
                code = context.items[item_id].code
                value = None if parsed is None else parsed.get(code)
                problem = ("" if value is not None else "The answer holds no JSON object." if parsed is None else
                           f"The answer gives no score on item {code}'s scale (missing, or not one of its values).")
                rows.append((pk, [value, None, None, reason if value is not None else content, DONE if value is not None
                                  else UNSCORED, problem, call_id, r.from_cache, now]))
        engine.bulk_set(JudgeResult, rows, RESULT_FIELDS, {"claimed_by": "", "claimed_until": None,
                                                            "not_before": None}, only_status=["pending"])


DONE, UNSCORED = JudgeResult.Status.DONE, JudgeResult.Status.UNSCORED
RESULT_FIELDS = ["value", "p_yes", "uncertainty", "rationale", "status", "error", "call", "from_cache",
                 "updated_at"]
HANDLER = engine.register(JudgeHandler())


def process_unit(run_id: int, dialogue_id: int, item_id: int | None) -> UnitOutcome:
    """Judge one unit now, in this process (tests, small runs): the engine's synchronous path. A retry time set
    by an earlier failure is ignored (the caller asks now); ``retry_in`` says when the engine would retry."""
    qs = JudgeResult.objects.filter(run_id=run_id, dialogue_id=dialogue_id, status=JudgeResult.Status.PENDING)
    if item_id is not None:
        qs = qs.filter(item_id=item_id)
    ids = list(qs.values_list("pk", flat=True))
    if not ids:
        HANDLER.maybe_finish(run_id)
        return UnitOutcome("skipped")
    return outcome_of(engine.process(HANDLER.kind, run_id, ids, now=True), HANDLER, ids)


def drain(run: JudgeRun, *, timeout: float = 120.0) -> list[str]:
    """Process a run in this process until nothing is left (tests, the CLI without workers)."""
    return engine.run_until_idle(HANDLER.kind, run.pk, timeout=timeout)


# ---------------------------------------------------------------------------------------------------------------
# cost before start
# ---------------------------------------------------------------------------------------------------------------
ESTIMATE_SAMPLE = 20_000


def estimate(config: JudgeConfig, corpus: Corpus, *, item_codes: list[str] | None = None, filter_split: str = "",
             filter_model: str = "", filter_language: str = "", batch: bool = False,
             cached_before: datetime | None = None) -> dict[str, Any]:
    """What a run would send before anything is sent: calls (requests not already in the cache), tokens and cost
    (with ``cached_before``: from the cache as it was then, for a run that started sending at that time).

    Prompt tokens are estimated as characters / 4 (a common rule of thumb for English; Chinese text has more
    tokens per character); completion tokens as the mean of this model's past answers at this endpoint, or
    ``max_tokens`` (an upper bound) when there are none. Runs of more than ``ESTIMATE_SAMPLE`` requests are
    estimated from an evenly spaced sample."""
    gateway.usable_endpoint(config.base_url, config.api_key_env)
    _check_items(config, item_codes)
    check_target(config.prompt_set.scale_version, corpus, RunError)
    run = JudgeRun(config=config, corpus=corpus, project_id=corpus.project_id, item_codes=list(item_codes or []),
                   filter_split=filter_split, filter_model=filter_model, filter_language=filter_language,
                   snapshot={**config_snapshot(config), **draws_snapshot(config), "batch": bool(batch)})
    context = RunContext(config=run.snapshot, prompt_set=config.prompt_set,
                         items={i.pk: i for i in run_items(run)},
                         questions=dict(Prompt.objects.filter(prompt_set=config.prompt_set)
                                        .values_list("item_id", "question")),
                         limit=engine.Limit("estimate", 1), prices=(Decimal(0), Decimal(0)))
    endpoint = gateway.resolve_endpoint(config.base_url, config.api_key_env)
    dialogue_ids = list(run_dialogues(run).order_by("pk").values_list("pk", flat=True))
    items = list(context.items.values())
    per_dialogue = config.mode == JudgeConfig.Mode.PER_DIALOGUE
    requests = len(dialogue_ids) * (1 if per_dialogue else len(items))
    step = max(1, -(-requests // ESTIMATE_SAMPLE))
    sampled_dialogues = dialogue_ids[::step] if per_dialogue else dialogue_ids
    chars = cached = sampled = 0
    keys = []
    for start_at in range(0, len(sampled_dialogues), 500):
        chunk = set(sampled_dialogues[start_at:start_at + 500])
        dialogues = Dialogue.objects.prefetch_related("redactions").in_bulk(chunk)
        for dialogue_id in sorted(chunk):
            groups = [items] if per_dialogue else [[item] for item in items]
            for group in groups:
                sampled += 1
                if not per_dialogue and sampled % step:
                    continue
                payload = build_payload(run.snapshot, config.prompt_set, dialogues[dialogue_id], group,
                                        context.questions)
                chars += sum(len(m["content"]) for m in payload["messages"])
                keys.append(gateway.request_key(endpoint.base_url, payload, project=run.project_id))
    for start_at in range(0, len(keys), 2000):  # by key, as the engine reads the cache: the key holds the project
        known = LLMCall.unscoped.filter(key__in=keys[start_at:start_at + 2000])
        if cached_before is not None:
            known = known.filter(created_at__lt=cached_before)
        cached += known.count()
    counted = len(keys) or 1
    share_cached = cached / counted
    calls = round(requests * (1 - share_cached))
    prompt_tokens = round(chars / counted / 4 * calls)
    past = LLMCall.objects.filter(endpoint=endpoint.base_url, model=config.model)  # the project's own
    if cached_before is not None:
        past = past.filter(created_at__lt=cached_before)
    past = past.aggregate(n=Count("id"), mean=Avg("completion_tokens"))
    per_call = float(past["mean"]) if past["n"] else float(config.max_tokens) * draws_snapshot(config)["draws"]
    completion_tokens = round(per_call * calls)
    discount = BATCH_DISCOUNT if batch else Decimal(1)
    priced = bool(config.price_input_per_1k or config.price_output_per_1k)
    cost = gateway.cost(prompt_tokens, completion_tokens, Decimal(str(config.price_input_per_1k)) * discount,
                        Decimal(str(config.price_output_per_1k)) * discount)
    basis = "the mean of this model's past answers" if past["n"] else "the judge's max_tokens, an upper bound"
    return {"requests": requests, "calls": calls, "cached": requests - calls, "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens, "completion_basis": basis,
            "cost": float(cost) if priced else None, "currency": config.currency,
            "cost_text": (f"{cost:.4f} {config.currency}" if priced else
                          f"no prices set for judge {config.name}: cost unknown"),
            "sampled": step > 1, "batch": bool(batch)}


# ---------------------------------------------------------------------------------------------------------------
# progress
# ---------------------------------------------------------------------------------------------------------------
def progress(run: JudgeRun) -> dict:
    """Counts, tokens, cost, rate, ETA and delivery state for the run page and the CLI."""
    counts = dict(JudgeResult.objects.filter(run=run).values_list("status").annotate(n=Count("id")).order_by())
    cached = JudgeResult.objects.filter(run=run, from_cache=True).exclude(status=JudgeResult.Status.PENDING).count()
    total = sum(counts.values())
    done = counts.get("done", 0)
    unscored = counts.get("unscored", 0)
    failed = counts.get("failed", 0)
    remaining = counts.get("pending", 0)
    calls = (LLMCall.objects.filter(pk__in=JudgeResult.objects.filter(run=run, from_cache=False, call__isnull=False)
                                    .values("call_id"))
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
    spend = engine.spend(HANDLER, run)
    work = engine.open_work(run, remaining, eta)
    return {
        "total": total, "done": done, "cached": cached, "unscored": unscored, "failed": failed, **work,
        "percent": round(100 * (total - remaining) / total, 1) if total else 0.0,
        "segments": engine.segments(total, done, unscored, failed, ended=work["ended"]),
        "calls": calls["n"] or 0, "prompt_tokens": calls["pt"] or 0, "completion_tokens": calls["ct"] or 0,
        "cost": spend["cost"], "currency": spend["currency"], "spend": spend,
        "elapsed_seconds": elapsed, "calls_per_second": rate,
        "status": run.status, "status_label": run.get_status_display(), "error": run.error,
        "causes": engine.top_causes(HANDLER, run.pk) if failed or unscored else [],
        "delivery": delivery.state(HANDLER, run, remaining=remaining),
    }
