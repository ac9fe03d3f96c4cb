"""The Celery application. Workers start with ``python -m config.run worker`` (or ``celery -A config worker``)."""

import os

from celery import Celery
from celery.signals import task_postrun, task_prerun

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("minicex")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# The scoring app keeps one tasks module per job's package.
app.autodiscover_tasks([f"scoring.{package}" for package in ("jobs", "llm", "judges", "preference", "generation")])


@task_prerun.connect
@task_postrun.connect
def _close_old_connections(**kwargs) -> None:
    """Drop this thread's database connections that are broken or older than CONN_MAX_AGE, as Django does around
    a request; healthy ones are reused by the next task (see CELERY_DB_REUSE_MAX in settings)."""
    from django.db import close_old_connections

    close_old_connections()
