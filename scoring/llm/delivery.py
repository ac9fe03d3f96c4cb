"""What the run and job pages (and ``--wait`` progress bars) say about delivery: whether the broker can be reached,
whether an engine works on the job, and the state of its provider batches.

The broker only wakes workers up, so while it is down a running job either goes on (an engine already works on it)
or waits; the page says "waiting for the broker" instead of showing a rate that silently falls, then "resumed".
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext, gettext_noop

from scoring.llm import batch, engine
from scoring.llm.models import LLMBatch, LLMWorker

# How long a page keeps saying "resumed" after the broker came back.
RESUMED_FOR = 60.0
# How long a running job may wait for an engine before the page says none works on it: engines look for running jobs
# and note which they work on every second (LLM_HEARTBEAT_SECONDS), so a live one takes a new job up within seconds.
NO_WORKER_AFTER = 20.0
_PING_EVERY = 3.0

#: The notices by kind: kept in English in the progress data (the API, ``--wait``), shown in the page's language by
#: :func:`notice_text` (``templates/scoring/partials/delivery.html``).
NOTICES = {
    "broker_down": gettext_noop("Waiting for the broker: the message queue has been unreachable. Work goes on where "
                                "a worker already has it and resumes by itself when the broker is back."),
    "broker_down_for": gettext_noop("Waiting for the broker: the message queue has been unreachable for %(seconds)s "
                                    "s. Work goes on where a worker already has it and resumes by itself when the "
                                    "broker is back."),
    "resumed": gettext_noop("Resumed: the broker is reachable again."),
    "no_worker_alive": gettext_noop("No LLM worker has taken up this job in %(seconds)s s, although some are running: "
                                    "check them on the System page (do they take the %(queue)s queue?), or start "
                                    "another with make run or on its own: %(command)s"),
    "no_worker": gettext_noop("No LLM worker is running, so nothing works on this job. Start one with make run (it "
                              "starts the LLM worker with the web server) or on its own: %(command)s; the System page "
                              "lists the workers."),
}


def notice_text(kind: str, args: dict[str, Any], *, translated: bool = False) -> str:
    """A notice of :data:`NOTICES` with its values, in English or (``translated``) in the active language."""
    template = NOTICES[kind]
    return (gettext(template) if translated else template) % args


_lock = threading.Lock()
_state = {"checked": 0.0, "reachable": True, "down_since": None, "up_since": None, "error": ""}


def broker() -> dict[str, Any]:
    """Whether this process can reach the broker now (pinged at most every few seconds), since when it has been
    down, and when it came back."""
    from core.site.health import check_broker

    now = time.monotonic()
    with _lock:
        if now - _state["checked"] < _PING_EVERY:
            return dict(_state)
        _state["checked"] = now
    result = check_broker(timeout=1.0)
    with _lock:
        if result["ok"]:
            if not _state["reachable"]:
                _state["up_since"] = time.time()
            _state.update(reachable=True, down_since=None, error="")
        else:
            if _state["reachable"]:
                _state["down_since"] = time.time()
            _state.update(reachable=False, error=result.get("error", ""))
        return dict(_state)


def state(handler: engine.Handler, job, *, remaining: int) -> dict[str, Any]:
    """The delivery notice of a job: ``{"notice", "level", "broker_reachable", "engines", "batches"}``, and the
    notice's kind of :data:`NOTICES` and values (``notice_kind``, ``notice_args``) for pages to translate it."""
    status = broker()
    key = f"{handler.kind}:{job.pk}"
    engines = sum(1 for jobs in LLMWorker.objects.filter(owner__in=engine.live_owners())
                  .values_list("jobs", flat=True) if key in (jobs or []))
    batches = batch.summary(handler.kind, job.pk) if getattr(job, "batch", False) or \
        LLMBatch.objects.filter(kind=handler.kind, job_id=job.pk).exists() else []
    kind, args, level = "", {}, "info"
    running = job.status == handler.running_status and remaining
    if running and not status["reachable"]:
        since = status["down_since"]
        kind, level = ("broker_down_for", "warning") if since else ("broker_down", "warning")
        args = {"seconds": int(time.time() - since)} if since else {}
    elif running and status["up_since"] and time.time() - status["up_since"] < RESUMED_FOR:
        kind = "resumed"
    elif (running and not engines and not any(b["status"] == "Submitted" for b in batches) and _waited(job)
          and not _waiting_for_retry(handler, job)):
        (kind, args), level = _no_worker(bool(engine.live_owners())), "warning"
    return {"notice": notice_text(kind, args) if kind else "", "notice_kind": kind, "notice_args": args,
            "level": level, "broker_reachable": status["reachable"], "engines": engines, "batches": batches}


def _waited(job) -> bool:
    """Whether the job has been running long enough for an engine to have taken it up: :data:`NO_WORKER_AFTER`
    seconds since it started or last stored an answer (an engine notes activity as soon as it takes a job up).
    Wake-ups are no sign: the reconciler sends one every 15 s to a job nobody works on."""
    last = max((m for m in (job.started_at, job.activity_at) if m is not None), default=None)
    return last is None or last < timezone.now() - timedelta(seconds=NO_WORKER_AFTER)


def _no_worker(alive: bool) -> tuple[str, dict[str, Any]]:
    """What to do when no engine works on a running job (a kind of :data:`NOTICES` and its values): start the LLM
    worker ``make run`` starts."""
    from django.conf import settings

    from core.site.workers import llm_worker_hint

    command = llm_worker_hint(settings.CELERY_LLM_QUEUE)
    if alive:
        return "no_worker_alive", {"seconds": f"{NO_WORKER_AFTER:.0f}", "queue": settings.CELERY_LLM_QUEUE,
                                   "command": command}
    return "no_worker", {"command": command}



def _waiting_for_retry(handler: engine.Handler, job) -> bool:
    """All open units wait for a retry time (backoff after 429/5xx): nothing is wrong."""
    now = timezone.now()
    return not handler.open_units(job.pk).filter(engine.due(now)).exists()
