"""Project configuration package: settings, URLs, Celery app and the run launcher."""

from .celery import app as celery_app

__all__ = ("celery_app",)
