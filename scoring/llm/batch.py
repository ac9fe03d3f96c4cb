"""Sending a job through the provider's Batch API (``/v1/files`` + ``/v1/batches``): half the price, results within
24 hours, with the same request cache, per-unit results and resume as live requests.

The engine claims the job's due units, answers what the cache holds, uploads the rest as one JSON Lines file per
batch (``custom_id`` = the request's cache key) and hands the units to the batch (claimed by ``batch:<id>`` until
its results are in). The reconciler polls open batches; when one ends, its answers are stored like live answers
(failed lines are retried in a later batch), and the job is woken for whatever is left.
"""

from __future__ import annotations

import io
import json
import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from projects.scoping import in_project
from scoring.llm import engine, gateway
from scoring.llm.models import LLMBatch

log = logging.getLogger(__name__)

# The provider's limits: 50,000 requests and 200 MB per input file.
MAX_REQUESTS = 50_000
MAX_BYTES = 190 * 1024 * 1024
CHAT_URL = "/v1/chat/completions"
# Provider statuses after which a batch has no more results to give.
ENDED = {"completed", "failed", "expired", "cancelled"}


def poll_seconds() -> float:
    return float(getattr(settings, "LLM_BATCH_POLL_SECONDS", 60))


def submit(handler: engine.Handler, job, owner: str) -> LLMBatch | None:
    """Claim the job's due units (up to one file), answer cached ones, upload the rest as one batch."""
    with in_project(job.project_id):  # the units and their dialogues are the job's project's
        return _submit(handler, job, owner)


def _submit(handler: engine.Handler, job, owner: str) -> LLMBatch | None:
    units = engine.claim(handler, job, MAX_REQUESTS, owner)
    if not units:
        handler.maybe_finish(job.pk)
        return None
    try:
        requests = handler.prepare(job, units)
    except gateway.NotConfigured as exc:
        engine.release(handler, [u.pk for u in units])
        handler.fail_job(job.pk, str(exc))
        return None
    try:
        misses = engine.resolve_cached(handler, job, requests)
    except engine.AnswersNotStored:  # the job is paused with the error
        return None
    # Every line of a batch counts as a request sent, whatever becomes of the batch.
    misses = engine.charge(handler, job, misses)
    if not misses:
        handler.maybe_finish(job.pk)
        return None
    lines, size, kept = [], 0, []
    for r in misses:
        line = json.dumps({"custom_id": r.key, "method": "POST", "url": CHAT_URL, "body": r.payload},
                          ensure_ascii=False)
        if size + len(line) > MAX_BYTES:
            break
        lines.append(line)
        size += len(line) + 1
        kept.append(r)
    engine.release(handler, [u for r in misses[len(kept):] for u in r.units])
    engine.refund_requests(handler, job.pk, misses[len(kept):])
    first = kept[0]
    with transaction.atomic():
        batch = LLMBatch.objects.create(
            kind=handler.kind, job_id=job.pk, base_url=first.endpoint.base_url, api_key_env=first.endpoint.key_source,
            timeout_seconds=first.timeout,
            requests={r.key: {"units": r.units, "data": r.data, "attempts": r.attempts,
                              "max_attempts": r.max_attempts, "prices": [str(p) for p in r.prices]} for r in kept})
        # Held by the batch until its results are in (the provider allows 24 hours).
        handler.unit_model.unscoped.filter(pk__in=[u for r in kept for u in r.units]).update(
            claimed_by=batch.owner, claimed_until=engine.lease_until(26 * 3600))
    client = gateway.sync_client(first.endpoint, timeout=max(60.0, first.timeout))
    try:
        uploaded = client.files.create(file=("requests.jsonl", io.BytesIO("\n".join(lines).encode())),
                                       purpose="batch")
        created = client.batches.create(input_file_id=uploaded.id, endpoint=CHAT_URL, completion_window="24h",
                                        metadata={"minicex": f"{handler.kind}:{job.pk}"})
    except Exception as exc:  # the provider refused or is unreachable: the units go back to the job
        _give_up(batch, handler, f"could not submit the batch: {exc}", retryable=_retryable(exc),
                 key_refused=getattr(exc, "status_code", None) in gateway.KEY_REFUSED)
        batch.refresh_from_db()
        return batch
    LLMBatch.objects.filter(pk=batch.pk).update(provider_id=created.id, input_file_id=uploaded.id,
                                                provider_status=created.status or "validating",
                                                polled_at=timezone.now())
    handler.job_model.unscoped.filter(pk=job.pk).update(activity_at=timezone.now())
    batch.refresh_from_db()
    log.info("submitted %s (%d requests)", batch, len(kept))
    return batch


def _retryable(exc: Exception) -> bool:
    status = getattr(exc, "status_code", None)
    return status is None or status in (408, 409, 429) or status >= 500


def _give_up(batch: LLMBatch, handler: engine.Handler, message: str, *, retryable: bool,
             key_refused: bool = False) -> None:
    """The batch produced nothing (more): its open units go back to the job, or the job pauses (a refused key) or
    fails (any other error that retrying cannot fix)."""
    units = [u for spec in batch.requests.values() for u in spec["units"]]
    handler.unit_model.unscoped.filter(pk__in=units, claimed_by=batch.owner).update(
        claimed_by="", claimed_until=None, not_before=timezone.now() + timedelta(seconds=30), error=message[:2000])
    LLMBatch.objects.filter(pk=batch.pk).update(status=LLMBatch.Status.FAILED, error=message[:2000],
                                                finished_at=timezone.now())
    if key_refused:
        handler.pause_job(batch.job_id, f"The provider refused the key ({batch.api_key_env} at {batch.base_url}): "
                                        f"{message}. Nothing more is sent. Fix the key, then resume.")
    elif not retryable:
        handler.fail_job(batch.job_id, f"The provider refused the batch: {message}")
    else:
        engine.wake(handler.kind, batch.job_id)


def _client(batch: LLMBatch):
    endpoint = gateway.resolve_endpoint(batch.base_url, batch.api_key_env)
    return endpoint, gateway.sync_client(endpoint, timeout=max(60.0, batch.timeout_seconds))


def _lines(client, file_id: str) -> list[dict]:
    if not file_id:
        return []
    text = client.files.content(file_id).text
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def poll(batch_id: int) -> str:
    """Look at a batch at the provider; store its results once it has ended. Returns the provider's status."""
    batch = LLMBatch.objects.filter(pk=batch_id, status=LLMBatch.Status.SUBMITTED).first()
    if batch is None or not batch.provider_id:
        return "gone"
    handler = engine.handler_for(batch.kind)
    endpoint, client = _client(batch)
    try:
        remote = client.batches.retrieve(batch.provider_id)
    except Exception as exc:
        LLMBatch.objects.filter(pk=batch.pk).update(polled_at=timezone.now(), error=str(exc)[:2000])
        return "unreachable"
    counts = remote.request_counts.model_dump() if getattr(remote, "request_counts", None) else {}
    LLMBatch.objects.filter(pk=batch.pk).update(provider_status=remote.status, counts=counts,
                                                polled_at=timezone.now(),
                                                output_file_id=remote.output_file_id or "",
                                                error_file_id=remote.error_file_id or "")
    if remote.status not in ENDED:
        return remote.status
    job = handler.job_model.unscoped.get(pk=batch.job_id)
    payloads = {line["custom_id"]: line["body"] for line in _lines(client, batch.input_file_id)}
    results = _lines(client, remote.output_file_id or "") + _lines(client, remote.error_file_id or "")
    requests = []
    answered = set()
    for line in results:
        key = line.get("custom_id")
        spec = batch.requests.get(key)
        if spec is None or key in answered:
            continue
        answered.add(key)
        requests.append(_request(batch, endpoint, key, spec, payloads.get(key, {}), line))
    # Lines the provider never answered (an expired or cancelled batch): asked again in a later batch.
    for key, spec in batch.requests.items():
        if key not in answered:
            outcome = gateway.Outcome(ok=False, retryable=True, error=f"the batch ended ({remote.status}) before "
                                                                       "this request was answered")
            requests.append(_request(batch, endpoint, key, spec, payloads.get(key, {}), None, outcome))
    with in_project(job.project_id):  # the units and their dialogues are the job's project's
        for start in range(0, len(requests), 500):
            chunk = requests[start:start + 500]
            engine.finish(handler, job, chunk)
    LLMBatch.objects.filter(pk=batch.pk).update(
        status=LLMBatch.Status.COMPLETED if remote.status == "completed" else LLMBatch.Status.FAILED,
        finished_at=timezone.now(),
        error="" if remote.status == "completed" else _errors_text(remote))
    handler.maybe_finish(job.pk)
    engine.live_owners(fresh=True)
    if handler.open_units(job.pk).exists():
        engine.wake(handler.kind, job.pk)
    return remote.status


def _errors_text(remote) -> str:
    errors = getattr(remote, "errors", None)
    data = getattr(errors, "data", None) or []
    return "; ".join(str(getattr(e, "message", e)) for e in data)[:2000] or f"batch {remote.status}"


def _request(batch: LLMBatch, endpoint: gateway.Endpoint, key: str, spec: dict, payload: dict, line: dict | None,
             outcome: gateway.Outcome | None = None) -> engine.Request:
    from decimal import Decimal

    if outcome is None:
        response = (line or {}).get("response") or {}
        status = int(response.get("status_code") or 0)
        if status == 200:
            outcome = gateway.parse_completion(response.get("body") or {})
        else:
            error = (line or {}).get("error") or (response.get("body") or {}).get("error") or {}
            message = error.get("message") if isinstance(error, dict) else str(error)
            outcome = gateway.Outcome(ok=False, retryable=status == 0 or status in (408, 409, 429) or status >= 500,
                                      status=status or None, error=f"HTTP {status}: {message}" if status else
                                      str(message or "the batch line has no answer"))
    return engine.Request(units=spec["units"], endpoint=endpoint, payload=payload, key=key,
                          limit=engine.Limit(f"batch-{batch.pk}", 1), timeout=batch.timeout_seconds,
                          prices=tuple(Decimal(p) for p in spec["prices"]), attempts=spec["attempts"],
                          max_attempts=spec["max_attempts"], data=spec["data"], outcome=outcome)


def cancel_open(handler: engine.Handler, job_id: int) -> int:
    """Cancel a job's open batches at the provider and give their units back."""
    cancelled = 0
    for batch in LLMBatch.objects.filter(kind=handler.kind, job_id=job_id, status=LLMBatch.Status.SUBMITTED):
        try:
            _, client = _client(batch)
            if batch.provider_id:
                client.batches.cancel(batch.provider_id)
        except Exception as exc:
            log.warning("could not cancel %s at the provider: %s", batch, exc)
        units = [u for spec in batch.requests.values() for u in spec["units"]]
        handler.unit_model.unscoped.filter(pk__in=units, claimed_by=batch.owner).update(claimed_by="",
                                                                                       claimed_until=None)
        LLMBatch.objects.filter(pk=batch.pk).update(status=LLMBatch.Status.CANCELLED, finished_at=timezone.now())
        cancelled += 1
    return cancelled


def due_for_polling() -> list[int]:
    """Open batches not looked at for ``LLM_BATCH_POLL_SECONDS`` (claimed here, so one reconciler polls each)."""
    cutoff = timezone.now() - timedelta(seconds=poll_seconds())
    out = []
    for pk in LLMBatch.objects.filter(status=LLMBatch.Status.SUBMITTED).exclude(provider_id="").filter(
            polled_at__lt=cutoff).values_list("pk", flat=True):
        if LLMBatch.objects.filter(pk=pk, polled_at__lt=cutoff).update(polled_at=timezone.now()):
            out.append(pk)
    return out


def reconcile() -> list[int]:
    """Queue a poll of every open batch not looked at for ``LLM_BATCH_POLL_SECONDS`` (a reconciler hook)."""
    from celery import current_app

    due = due_for_polling()
    for pk in due:
        current_app.send_task("scoring.llm.poll_batch", (pk,))
    return due


engine.batch_submitter = submit


def summary(kind: str, job_id: int) -> list[dict[str, Any]]:
    """A job's batches for its page: provider state, counts, when submitted and finished."""
    return [{"id": b.pk, "provider_id": b.provider_id, "provider_status": b.provider_status or "submitting",
             "status": b.get_status_display(), "requests": len(b.requests), "counts": b.counts,
             "created_at": b.created_at, "finished_at": b.finished_at, "error": b.error}
            for b in LLMBatch.objects.filter(kind=kind, job_id=job_id).order_by("created_at")]
