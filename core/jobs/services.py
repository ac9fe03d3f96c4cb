"""Create, enqueue and execute background jobs. The task body lives here so tests can call it directly."""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from celery import current_app
from django.db import connection, transaction
from django.db.models import DateTimeField, DurationField, ExpressionWrapper, F, Q
from django.db.models.functions import Now
from django.utils import timezone, translation
from django.utils.module_loading import import_string

from core.jobs.models import Job
from projects import scoping

log = logging.getLogger(__name__)

HANDLERS: dict[str, Callable[[Job], dict[str, Any]]] = {}
# Handlers whose module is imported only when a job of that kind runs (kind -> dotted path): the campaign report
# pulls in pandas and scipy, which a web process or an LLM worker need not load at start-up.
LAZY_HANDLERS: dict[str, str] = {}

# What other apps keep ready in the worker once a job of a kind has succeeded (kind -> callables taking the job),
# e.g. the study archive's digests of the data a report read (studies.figure_rows), so that no page has to stream them.
FOLLOW_UPS: dict[str, list[Callable[[Job], None]]] = {}


# What the worker check counts in the database the web process uses (name -> callable returning a count), registered
# by the apps that own the tables, so the job machinery imports none of them.
WORKER_CHECK_COUNTS: dict[str, Callable[[], int]] = {}


def follow_up(kind: str):
    """Register a callable run (in the job's project) after each job of ``kind`` succeeds; its failure is logged,
    the job stays succeeded."""
    def register(fn):
        FOLLOW_UPS.setdefault(kind, []).append(fn)
        return fn

    return register


def handler(kind: str):
    def register(fn):
        HANDLERS[kind] = fn
        return fn

    return register


def handler_for(kind: str) -> Callable[[Job], dict[str, Any]]:
    """The handler of a job kind, importing a lazily registered one on first use."""
    if kind not in HANDLERS and kind in LAZY_HANDLERS:
        HANDLERS[kind] = import_string(LAZY_HANDLERS[kind])
    return HANDLERS[kind]


def submit(kind: str, user=None, *, project, **params) -> Job:
    """Create a job and enqueue it once the surrounding transaction commits (the reconciler enqueues it again
    if the message is lost). ``project`` is the project of the object the job works for (None: an instance-wide
    job, the worker check, which only administrators see)."""
    job = Job.objects.create(kind=kind, params=params, requested_by=user, project_id=getattr(project, "pk", project))
    transaction.on_commit(lambda: send(job.pk))
    return job


def current(kind: str, params: dict[str, Any], lookup: dict[str, Any], *, project, user=None, start: bool = True,
            retry: bool = False) -> Job | None:
    """The job of ``kind`` whose params match ``lookup`` (e.g. a report for the current data and options): a
    finished one if there is one, else a running one, else the one that failed (the same data would fail again).
    With ``start`` a new one with ``params`` is queued when there is none, or with ``retry`` when the last one
    failed. Only jobs of ``project`` (the project of the object the job works for) are looked at; a new one
    belongs to it."""
    same = (Job.objects.filter(kind=kind, project=getattr(project, "pk", project),
                               **{f"params__{key}": value for key, value in lookup.items()})
            .exclude(status=Job.Status.SUCCEEDED, result={}))  # superseded: see forget_superseded
    job = same.exclude(status=Job.Status.FAILED).order_by("-created_at").first()
    if job is None and not retry:
        job = same.order_by("-created_at").first()
    if job is None and start:
        job = submit(kind, user=user, project=project, **params)
    return job


def forget_superseded(job: Job, *, same: tuple[str, ...], version: str) -> int:
    """Empty the stored results of earlier finished jobs of ``job``'s kind that it replaces: those with the same
    ``same`` params whose ``version`` param (what the data looked like: labels, answers, code) differs. Pages look a
    report up by the current version, so nothing asks for them again, and each holds a whole report; the rows stay
    (an open page polling one still hears that it finished), and :func:`current` never serves an emptied one."""
    params = job.params
    older = (Job.objects.filter(kind=job.kind, status=Job.Status.SUCCEEDED, project=job.project_id,
                                created_at__lte=job.created_at, **{f"params__{same[0]}": params.get(same[0])})
             .exclude(pk=job.pk).exclude(result={}).values_list("pk", "params"))
    superseded = [pk for pk, other in older if other.get(version) != params.get(version)
                  and all(other.get(key) == params.get(key) for key in same)]
    return Job.objects.filter(pk__in=superseded).update(result={})


def send(job_id: int, countdown: float | None = None) -> bool:
    """Queue a job's task (to start in ``countdown`` seconds); False when the broker cannot be reached (the
    reconciler tries again). ``enqueued_at`` is when the message is due: the reconciler sends it again only if it
    has not started a worker :data:`RESEND_AFTER` after that (not every few seconds while a countdown runs)."""
    Job.unscoped.filter(pk=job_id).update(enqueued_at=timezone.now() + timedelta(seconds=countdown or 0))
    try:
        current_app.send_task("scoring.run_job", (job_id,), countdown=countdown or None)
    except Exception as exc:
        log.warning("could not queue job %s: %s", job_id, exc)
        return False
    return True


def execute(job_id: int) -> Job:
    """Run one job to completion, recording the result or the error on the row. A message delivered twice runs
    the job once: a finished job, or one another live worker is running, is left alone. A debounced job
    (:mod:`core.jobs.figures`) whose inputs changed again since its message was sent is sent again for later."""
    now = timezone.now()
    with transaction.atomic():
        job = Job.unscoped.select_for_update().annotate(silence=beat_silence()).get(pk=job_id)
        if job.is_finished:
            return job  # a redelivered message after completion: nothing to do
        if job.status == Job.Status.RUNNING and job.silence is not None and job.silence < HEARTBEAT_STALE:
            return job  # running elsewhere
        wait = due_in(job, now) if job.status == Job.Status.QUEUED else 0.0
        if wait:
            transaction.on_commit(lambda: send(job_id, countdown=wait))
            return job
        job.status = Job.Status.RUNNING
        job.started_at = now
        job.heartbeat_at = Now()
        job.attempts += 1
        job.save(update_fields=["status", "started_at", "heartbeat_at", "attempts"])
        job.refresh_from_db(fields=["heartbeat_at"])
    beating = threading.Event()
    heart = threading.Thread(target=_beat, args=(job.pk, beating), name=f"job-{job.pk}-heartbeat", daemon=True)
    heart.start()
    try:
        # the job's project (none: the instance-wide worker check); stored figures and archives are written in
        # English whatever the language of the request that ran the job in the embedded mode
        with scoping.in_project(job.project_id), translation.override("en"):
            result = handler_for(job.kind)(job)
    except Exception as exc:
        job.status = Job.Status.FAILED
        job.error = f"{type(exc).__name__}: {exc}"
        job.finished_at = timezone.now()
        job.save(update_fields=["status", "error", "finished_at"])
        raise
    finally:
        beating.set()
        heart.join(5)
    job.status = Job.Status.SUCCEEDED
    job.result = result
    job.progress = 1.0
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "result", "progress", "finished_at"])
    for fn in FOLLOW_UPS.get(job.kind, []):
        try:
            with scoping.in_project(job.project_id):
                fn(job)
        except Exception:
            log.exception("follow-up %s of job %s failed", getattr(fn, "__name__", fn), job.pk)
    return job


# A debounced job's message that arrives this little before the job is due runs it (clocks, rounding).
EARLY_OK = timedelta(milliseconds=250)


def due_in(job: Job, now=None) -> float:
    """Seconds until a debounced job (:mod:`core.jobs.figures`: ``params["not_before"]``) may start (0: now)."""
    from datetime import datetime

    not_before = job.params.get("not_before") if isinstance(job.params, dict) else None
    if not not_before:
        return 0.0
    wait = datetime.fromisoformat(not_before) - (now or timezone.now())
    return 0.0 if wait <= EARLY_OK else wait.total_seconds()


# A running job whose worker has not beaten for this long is taken to be lost with its worker.
HEARTBEAT_EVERY = 5.0
HEARTBEAT_STALE = timedelta(seconds=60)


# The beats are stamped and their silence measured on the database's clock, the one every machine shares (as the LLM
# engines' heartbeats): a worker whose clock is ahead would otherwise run again a job another worker is running, one
# whose clock is behind leave a job of a dead worker waiting for minutes more.
def beat_silence() -> ExpressionWrapper:
    """How long ago a job's worker last beat, on the database's clock (None: never)."""
    return ExpressionWrapper(Now() - F("heartbeat_at"), output_field=DurationField())


def beaten_before(silence: timedelta) -> ExpressionWrapper:
    """The database's time ``silence`` ago: a running job whose last beat is older has lost its worker."""
    return ExpressionWrapper(Now() - silence, output_field=DateTimeField())
# A queued job whose message has not started a worker within this time is sent again.
RESEND_AFTER = timedelta(seconds=10)
MAX_ATTEMPTS = 3


def _beat(job_id: int, stop: threading.Event) -> None:
    try:
        while not stop.wait(HEARTBEAT_EVERY):
            Job.unscoped.filter(pk=job_id, status=Job.Status.RUNNING).update(heartbeat_at=Now())
    except Exception as exc:  # the database is down: the job itself will notice
        log.warning("job %s heartbeat failed: %s", job_id, exc)
    finally:
        connection.close()


def reconcile() -> dict[str, list[int]]:
    """Queue again jobs whose message was lost (queued, not started) or whose worker died (running, silent)."""
    now = timezone.now()
    resent, requeued, failed = [], [], []
    lost = Job.unscoped.filter(status=Job.Status.QUEUED).filter(
        Q(enqueued_at__lt=now - RESEND_AFTER) | Q(enqueued_at__isnull=True, created_at__lt=now - RESEND_AFTER))
    for job_id, enqueued in lost.values_list("pk", "enqueued_at"):
        claimed = Job.unscoped.filter(pk=job_id, status=Job.Status.QUEUED, enqueued_at=enqueued).update(enqueued_at=now)
        if claimed and send(job_id):
            resent.append(job_id)
    for job in Job.unscoped.filter(status=Job.Status.RUNNING, heartbeat_at__lt=beaten_before(HEARTBEAT_STALE)):
        if job.attempts >= MAX_ATTEMPTS:
            if Job.unscoped.filter(pk=job.pk, status=Job.Status.RUNNING, heartbeat_at=job.heartbeat_at).update(
                    status=Job.Status.FAILED, finished_at=now,
                    error=f"The worker running it stopped {job.attempts} times; giving up."):
                failed.append(job.pk)
        elif Job.unscoped.filter(pk=job.pk, status=Job.Status.RUNNING, heartbeat_at=job.heartbeat_at).update(
                status=Job.Status.QUEUED, enqueued_at=now, message="worker lost; queued again"):
            send(job.pk)
            requeued.append(job.pk)
    return {"resent": resent, "requeued": requeued, "failed": failed}


@handler(Job.Kind.WORKER_CHECK)
def worker_check(job: Job) -> dict[str, Any]:
    """Proves the whole path web -> broker -> worker -> database: the worker reports where it runs
    and what it sees in the database the web process uses."""
    import celery
    import django

    return {
        "worker_host": socket.gethostname(),
        "worker_pid": os.getpid(),
        "celery": celery.__version__,
        "django": django.__version__,
        "database_vendor": connection.vendor,
        **{name: count() for name, count in WORKER_CHECK_COUNTS.items()},
        "requested_at": job.created_at.isoformat(),
        "checked_at": timezone.now().isoformat(),
    }


def set_progress(job: Job, fraction: float, message: str) -> None:
    Job.unscoped.filter(pk=job.pk).update(progress=fraction, message=message[:200])
