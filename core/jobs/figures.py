"""Stored figures, so that no page computes them: reports are computed by a worker when their inputs change, and a page
shows the latest stored figures at once instead of computing them when someone looks.

A *subject* names one report (e.g. ``{"campaign": 7, "names": False, "ci_method": "percentile", ...}``); a
*version* param of its jobs says what the inputs looked like (a fingerprint of the labels, answers or votes). Then:

* :func:`refresh` is called where the inputs change (a run finishes, labels are submitted or imported, settings
  change). It is debounced: a burst of changes queues one job whose ``not_before`` moves to :func:`debounce` after
  the last change (at most :data:`MAX_WAIT` after the first), and the worker that receives it early sends it again
  for later (:func:`core.jobs.services.due_in`), so a burst is one computation, on the data as the burst left
  it.
* :func:`look` is what a page calls: the newest stored figures of the subject, and the job that is computing newer
  ones. The page shows the stored figures at once, marked *updating* while a newer job is queued or running, and
  *computing* only when there are none yet. A page that finds its figures older than the inputs and no job on the
  way queues one (a change that called no :func:`refresh`, e.g. a draft label), so figures never stay stale.
* The handler calls :func:`stamp` first: the version it computes from, read when it starts, not when it was queued.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.jobs import services as jobs
from core.jobs.models import Job


def debounce() -> timedelta:
    """Quiet time after the last change before the figures are computed (setting ``FIGURES_DEBOUNCE_SECONDS``)."""
    return timedelta(seconds=float(getattr(settings, "FIGURES_DEBOUNCE_SECONDS", 3.0)))


#: A steady stream of changes still gets new figures this long after its first change.
MAX_WAIT = timedelta(seconds=30)


@dataclass
class Figures:
    """What a page shows: ``stored`` (the newest finished job with figures, or None), ``pending`` (a newer job
    queued or running) and ``failed`` (the last attempt on the current inputs failed, and nothing newer runs);
    ``fresh`` when the stored figures are of the current inputs."""

    stored: Job | None
    pending: Job | None = None
    failed: Job | None = None
    fresh: bool = False

    @property
    def report(self) -> dict | None:
        return self.stored.result if self.stored is not None else None

    @property
    def updating(self) -> bool:
        """Figures are shown while newer ones are being computed."""
        return self.stored is not None and self.pending is not None

    @property
    def computing(self) -> bool:
        """No figures yet: the page says they are being computed."""
        return self.stored is None and self.pending is not None

    @property
    def job(self) -> Job | None:
        """The job the page follows: the one computing, else the failed one, else the stored one."""
        return self.pending or self.failed or self.stored

    @property
    def current_job(self) -> Job | None:
        """The job of the current inputs for an API or a download that must not serve older figures: the stored one
        when fresh, else the one computing, else the failed one (None: nothing queued)."""
        return self.stored if self.fresh else (self.pending or self.failed)


def _of_subject(kind: str, subject: dict[str, Any], project):
    return Job.objects.filter(kind=kind, project=getattr(project, "pk", project),
                              **{f"params__{key}": value for key, value in subject.items()})


def look(kind: str, subject: dict[str, Any], *, version_key: str, version: str, project, user=None,
         start: bool = True, retry: bool = False, extra: dict[str, Any] | None = None) -> Figures:
    """The subject's figures for a page (see the module docstring). With ``start``, a job is queued at once when
    the stored figures are older than ``version`` and none is on the way (not when the last attempt on this version
    failed, unless ``retry``). ``extra`` params go into a new job beside the subject and the version."""
    same = _of_subject(kind, subject, project)
    stored = (same.filter(status=Job.Status.SUCCEEDED).exclude(result={})
              .order_by("-created_at", "-id").first())
    if stored is not None and stored.params.get(version_key) == version:
        return Figures(stored, fresh=True)
    newer = same.filter(created_at__gte=stored.created_at).exclude(pk=stored.pk) if stored else same
    pending = (newer.filter(status__in=[Job.Status.QUEUED, Job.Status.RUNNING])
               .order_by("-created_at", "-id").first())
    if pending is not None:
        return Figures(stored, pending)
    failed = (newer.filter(status=Job.Status.FAILED, **{f"params__{version_key}": version})
              .order_by("-created_at", "-id").first())
    if failed is not None and not retry:
        return Figures(stored, failed=failed)
    if not start:
        return Figures(stored)
    job = jobs.submit(kind, user=user, project=project, **subject, **(extra or {}), **{version_key: version})
    return Figures(stored, job)


#: Figures queued inside :func:`computed_here` wait this long for the process that queued them to compute them
#: (should it stop first, a worker computes them then).
HOLD = timedelta(minutes=10)
_held: ContextVar[list[int] | None] = ContextVar("figures_held", default=None)


@contextmanager
def computed_here() -> Iterator[None]:
    """Figures queued inside are left to this process (the demo loaders, whose :func:`compute_now` takes the
    queued job over) instead of a worker computing the same figures meanwhile: their jobs wait up to :data:`HOLD`,
    and those still queued at the end go to the workers at once. ``make run`` starts the workers while the demo
    loads; without this, the finished demo campaign's report was computed three times at once (twice by the
    workers' debounced jobs, once by the loader), and each took 95-120 s instead of about 3 s on a busy machine."""
    held: list[int] = []
    token = _held.set(held)
    try:
        yield
    finally:
        _held.reset(token)
        release(held)


def release(job_ids: list[int]) -> list[int]:
    """The held jobs still queued, sent to the workers to start now; returns their ids."""
    sent = []
    for job in Job.unscoped.filter(pk__in=job_ids, status=Job.Status.QUEUED):
        params = {key: value for key, value in job.params.items() if key not in ("not_before", "first_change")}
        if Job.unscoped.filter(pk=job.pk, status=Job.Status.QUEUED).update(params=params):
            transaction.on_commit(lambda pk=job.pk: jobs.send(pk))
            sent.append(job.pk)
    return sent


def refresh(kind: str, subject: dict[str, Any], *, project, extra: dict[str, Any] | None = None,
            delay: timedelta | None = None) -> Job:
    """Queue the subject's figures to be computed once the inputs stop changing (debounced; see the module
    docstring). A job already queued for the subject is reused (its start moves later when it was itself waiting
    for a burst to end); one already running read older inputs, so a new one is queued after it. Inside
    :func:`computed_here` the job waits for this process instead."""
    now = timezone.now()
    held = _held.get()
    delay = HOLD if held is not None else debounce() if delay is None else delay
    waiting = _of_subject(kind, subject, project).filter(status=Job.Status.QUEUED).order_by("-created_at").first()
    if waiting is not None:
        if "not_before" not in waiting.params:
            return waiting  # queued to start now: it reads the inputs as they are when it starts
        first = datetime.fromisoformat(waiting.params.get("first_change") or waiting.params["not_before"])
        not_before = now + delay if held is not None else min(now + delay, first + MAX_WAIT)
        if Job.objects.filter(pk=waiting.pk, status=Job.Status.QUEUED).update(
                params={**waiting.params, "not_before": not_before.isoformat()}):
            if held is not None:
                held.append(waiting.pk)
            return waiting  # its message comes early, sees the later time and is sent again (jobs.due_in)
    not_before = now + delay
    job = Job.objects.create(kind=kind, project_id=getattr(project, "pk", project),
                             params={**subject, **(extra or {}), "not_before": not_before.isoformat(),
                                     "first_change": now.isoformat()})
    if held is not None:
        held.append(job.pk)
    transaction.on_commit(lambda: jobs.send(job.pk, countdown=delay.total_seconds()))
    return job


def stamp(job: Job, **params: Any) -> None:
    """Record params read when the job starts (the version of the inputs it computes from)."""
    job.params = {**job.params, **params}
    Job.objects.filter(pk=job.pk).update(params=job.params)  # the handler runs in the job's project


def plain(value: Any) -> Any:
    """``value`` as JSON the database stores (PostgreSQL's jsonb refuses NaN): numpy numbers as Python ones, NaN and
    infinities as None, tuples and sets as lists, mapping keys as strings, dates as ISO text."""
    import math

    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [plain(item) for item in value]
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        value = value.item()  # numpy scalars
    elif hasattr(value, "tolist"):
        return plain(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, datetime):
        return value.isoformat()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def compute_now(kind: str, subject: dict[str, Any], *, project, user=None, extra: dict[str, Any] | None = None
                ) -> Job:
    """Compute the subject's figures in this process (the demo loaders, so that no demo page computes on first
    view): a job queued for it (a debounced refresh) is run now instead of being left for a worker to repeat."""
    waiting = (_of_subject(kind, subject, project).filter(status=Job.Status.QUEUED)
               .order_by("-created_at", "-id").first())
    if waiting is not None:
        params = {key: value for key, value in waiting.params.items() if key not in ("not_before", "first_change")}
        Job.objects.filter(pk=waiting.pk).update(params=params)
        job_id = waiting.pk
    else:
        job_id = Job.objects.create(kind=kind, params={**subject, **(extra or {})}, requested_by=user,
                                    project_id=getattr(project, "pk", project)).pk
    return jobs.execute(job_id)
