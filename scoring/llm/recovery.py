"""The LLM engine's part of the reconciler (core/site/reconcile.py, run by every worker): free the claims and slots of
engines that are gone, wake every running job with units nobody works on, and the backlog shown on /healthz."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.db import models
from django.utils import timezone

from scoring.llm import journal
from scoring.llm.engine import HANDLERS, Handler, claimable, live_owners, recover_answers, send_wake
from scoring.llm.models import LLMBatch, LLMWorker

log = logging.getLogger(__name__)


def reap_dead_engines() -> list[str]:
    """Forget engines whose heartbeat stopped (or whose process on this host is gone): their unstored answers are
    recovered from their journal, their slots and reservations freed (:func:`scoring.llm.engine.reap`; their claims
    are free already: claims of engines that are not live do not count). A journal left in this machine's var
    folder by an engine reaped elsewhere is recovered too. Returns the engines reaped."""
    before = set(LLMWorker.objects.values_list("owner", flat=True))
    live_owners(fresh=True)  # reaps the engines it finds dead
    registered = set(LLMWorker.objects.values_list("owner", flat=True))
    known = {journal.file_stem(owner) for owner in registered}
    for stem in journal.owners_with_segments() - known:
        recovered = recover_answers(stem)
        if recovered:
            log.warning("recovered %d answers the stopped LLM engine %s had not stored", recovered, stem)
    return sorted(before - registered)


def stalled_jobs(handler: Handler, quiet_seconds: float = 5.0) -> list[int]:
    """Running jobs with units to claim now that no live engine works on, not woken within ``quiet_seconds``
    (or woken and idle since for 30 s: the message may have been lost)."""
    now = timezone.now()
    working = {int(key.split(":", 1)[1]) for jobs in LLMWorker.objects.filter(
        owner__in=live_owners()).values_list("jobs", flat=True)
        for key in jobs or [] if key.startswith(f"{handler.kind}:")}
    out = []
    for job_id, woken, active in handler.job_model.unscoped.filter(status=handler.running_status).values_list(
            "pk", "woken_at", "activity_at"):
        if job_id in working:
            continue
        recent = woken is not None and woken > now - timedelta(seconds=quiet_seconds)
        # Woken, but no engine took it up (an engine notes activity as soon as it is woken): wake again after 15 s
        # (the message may have died with the broker), not every few seconds (no LLM worker may be running).
        ignored = woken is not None and (active is None or active < woken) and \
            woken > now - timedelta(seconds=15)
        if recent or ignored:
            continue
        if claimable(handler, job_id, now).exists():
            out.append(job_id)
    return out


def reconcile() -> dict[str, Any]:
    """Free dead engines' claims and slots and wake every job with work nobody does."""
    dead = reap_dead_engines()
    woken = []
    for handler in HANDLERS.values():
        for job_id in stalled_jobs(handler):
            # Conditional: of several reconcilers, one wakes the job (and gives the claim back if it cannot).
            before = handler.job_model.unscoped.filter(pk=job_id).values_list("woken_at", flat=True).first()
            claimed = handler.job_model.unscoped.filter(pk=job_id, woken_at=before).update(woken_at=timezone.now()) \
                if before is not None else \
                handler.job_model.unscoped.filter(pk=job_id, woken_at__isnull=True).update(woken_at=timezone.now())
            if not claimed:
                continue
            if send_wake(handler.kind, job_id, copies=1):
                woken.append(f"{handler.kind}:{job_id}")
            else:
                handler.job_model.unscoped.filter(pk=job_id).update(woken_at=before)
    return {"dead_engines": dead, "woken": woken}


def backlog() -> dict[str, Any]:
    """For the staff view of /healthz: live engines, running jobs, and the age of the oldest pending unit of a
    running job (how long work has been waiting)."""
    now = timezone.now()
    oldest = None
    running = {}
    for handler in HANDLERS.values():
        ids = list(handler.job_model.unscoped.filter(status=handler.running_status).values_list("pk", flat=True))
        running[handler.kind] = len(ids)
        if ids:
            first = handler.unit_model.unscoped.filter(**{f"{handler.job_field}_id__in": ids},
                                                      status__in=handler.open_statuses).aggregate(
                at=models.Min("updated_at"))["at"]
            if first is not None and (oldest is None or first < oldest):
                oldest = first
    engines = LLMWorker.objects.filter(owner__in=live_owners())
    return {"engines": [{"owner": e.owner, "in_flight": e.in_flight, "jobs": e.jobs} for e in engines],
            "running_jobs": running,
            "oldest_pending_unit_seconds": round((now - oldest).total_seconds(), 1) if oldest else None,
            "open_batches": LLMBatch.objects.filter(status__in=LLMBatch.OPEN).count()}


