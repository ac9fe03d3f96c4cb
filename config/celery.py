"""The Celery application. Workers start with ``python -m config.run worker`` (or ``celery -A config worker``)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("minicex")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
