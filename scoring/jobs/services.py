"""Create, enqueue and execute background jobs. The task body lives here so tests can call it directly."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from typing import Any

from celery import current_app
from django.db import connection, transaction
from django.utils import timezone

from annotation.models import AuditEvent
from scoring.jobs.models import Job

HANDLERS: dict[str, Callable[[Job], dict[str, Any]]] = {}

# Pause and cancel of the fan-out runs (judge runs, generation jobs): from which statuses each is allowed.
_STOPPABLE = {"paused": ("running", "queued"), "cancelled": ("running", "queued", "paused")}


def pause_or_cancel(obj, status: str, user, reason: str, *, noun: str, action: str, error: type[Exception]):
    """Move a judge run or generation job to paused or cancelled (one conditional UPDATE, so it races with
    nothing) and record who and why; ``error`` is raised when its current status does not allow it."""
    changed = type(obj).objects.filter(pk=obj.pk, status__in=_STOPPABLE[status]).update(
        status=status, finished_at=timezone.now() if status == "cancelled" else None)
    if not changed:
        raise error(f"A {obj.get_status_display().lower()} {noun} cannot be {status}.")
    AuditEvent.record(user, f"{action}.{status}", obj, reason=reason)
    obj.refresh_from_db()
    return obj


def handler(kind: str):
    def register(fn):
        HANDLERS[kind] = fn
        return fn

    return register


def submit(kind: str, user=None, **params) -> Job:
    """Create a job and enqueue it once the surrounding transaction commits."""
    job = Job.objects.create(kind=kind, params=params, requested_by=user)
    transaction.on_commit(lambda: current_app.send_task("scoring.run_job", (job.pk,)))
    return job


def execute(job_id: int) -> Job:
    """Run one job to completion, recording the result or the error on the row."""
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job_id)
        if job.is_finished:
            return job  # a redelivered message after completion: nothing to do
        job.status = Job.Status.RUNNING
        job.started_at = timezone.now()
        job.attempts += 1
        job.save(update_fields=["status", "started_at", "attempts"])
    try:
        result = HANDLERS[job.kind](job)
    except Exception as exc:
        job.status = Job.Status.FAILED
        job.error = f"{type(exc).__name__}: {exc}"
        job.finished_at = timezone.now()
        job.save(update_fields=["status", "error", "finished_at"])
        raise
    job.status = Job.Status.SUCCEEDED
    job.result = result
    job.progress = 1.0
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "result", "progress", "finished_at"])
    return job


@handler(Job.Kind.WORKER_CHECK)
def worker_check(job: Job) -> dict[str, Any]:
    """Proves the whole path web -> broker -> worker -> database: the worker reports where it runs
    and what it sees in the database the web process uses."""
    import celery
    import django

    from annotation.models import Item, ScaleVersion

    return {
        "worker_host": socket.gethostname(),
        "worker_pid": os.getpid(),
        "celery": celery.__version__,
        "django": django.__version__,
        "database_vendor": connection.vendor,
        "scale_versions": ScaleVersion.objects.count(),
        "items": Item.objects.count(),
        "requested_at": job.created_at.isoformat(),
        "checked_at": timezone.now().isoformat(),
    }


def set_progress(job: Job, fraction: float, message: str) -> None:
    Job.objects.filter(pk=job.pk).update(progress=fraction, message=message[:200])
