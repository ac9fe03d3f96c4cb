"""The app's Celery application with a fault injected, for worker tests (``celery -A tests.fault_celery worker``).

``MINICEX_TEST_FAULT=apply``: the judge handler cannot store any answer (as when SQLite's branch of the engine's
bulk update set a foreign key to an integer), so the worker's engine meets a store failure on every answer."""

from __future__ import annotations

import os

from celery.signals import worker_init

from config.celery import app

__all__ = ["app"]


@worker_init.connect
def _inject(**kwargs) -> None:
    if os.environ.get("MINICEX_TEST_FAULT") != "apply":
        return
    import django

    django.setup()
    from scoring.judges.runs import JudgeHandler

    def cannot_store(self, run, requests, open_ids):
        raise ValueError('Cannot assign "1": "JudgeResult.call" must be a "LLMCall" instance.')

    JudgeHandler.apply = cannot_store
