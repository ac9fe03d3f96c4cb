"""The Celery application. Workers start with ``python -m config.run worker`` (or ``celery -A config worker``)."""

import os

from celery import Celery
from celery.signals import task_postrun, task_prerun, worker_ready, worker_shutdown
from celery.utils import timer2
from kombu.transport import TRANSPORT_ALIASES

from core.site import health

# The app's transports (config/broker.py: the embedded mode's scheme, and Redis with a worker that survives losing
# it), named here and imported by kombu when a connection is first made: a process that sends nothing (a
# management command printing stored figures) does not import the Redis client and kombu's transports.
TRANSPORT_ALIASES.setdefault("minicexfs", "config.broker:Transport")
for _scheme in ("redis", "rediss"):
    TRANSPORT_ALIASES[_scheme] = "config.broker:RedisTransport"

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# A worker skips Django's system checks at its start (Celery's Django fixup runs them unless this is set): they load
# the URLconf and the API schema's modules, seconds of a loaded machine before the worker takes its first task, and
# a replacement worker's start is the time its dead predecessor's work waits. The web server, ``migrate`` and
# ``manage.py check`` run them.
os.environ.setdefault("CELERY_SKIP_CHECKS", "1")

app = Celery("minicex")
health.register_celery_app(app)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# The background jobs' task (core.jobs, still named scoring.run_job so queued messages run) and the LLM engine's
# (judge runs, preference judging and generation are units of the engine, woken by scoring.llm.wake) live in
# packages, not in an app's tasks module.
app.autodiscover_tasks(["core.jobs", "scoring.llm"])


@task_prerun.connect
@task_postrun.connect
def _close_old_connections(**kwargs) -> None:
    """Drop this thread's database connections that are broken or older than CONN_MAX_AGE, as Django does around
    a request; healthy ones are reused by the next task (see CELERY_DB_REUSE_MAX in settings)."""
    from django.db import close_old_connections

    close_old_connections()


@worker_ready.connect
def _start_reconciler(**kwargs) -> None:
    """Every worker runs the reconciler (core/site/reconcile.py): it re-queues work whose message was lost."""
    from core.site import reconcile

    reconcile.start()


@worker_shutdown.connect
def _stop_reconciler(**kwargs) -> None:
    from core.site import reconcile

    reconcile.stop()


class PromptTimer(timer2.Timer):
    """The worker's timer thread (settings.CELERY_WORKER_TIMER; pools without an event loop), stopped at once.

    Celery's timer waits up to a second on its condition while it has nothing scheduled and its stop() only sets a
    flag, so every warm shutdown waited out that second. Here stop() also wakes the wait."""

    def stop(self) -> None:
        shutdown = getattr(self, "_Timer__is_shutdown", None)  # the flag run() checks after each wait
        if shutdown is not None:
            shutdown.set()
            with self.not_empty:
                self.not_empty.notify_all()
        super().stop()
