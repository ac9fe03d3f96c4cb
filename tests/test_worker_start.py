"""A worker's start: only a worker of the LLM queue imports the openai client (0.5 s of CPU, 1.2 s on a loaded
machine) before it consumes; a worker of the other queues never sends a request and starts without it."""

from __future__ import annotations

import os
import subprocess
import sys

CODE = """
import sys
import django
django.setup()
from celery import current_app
from django.conf import settings
from scoring.llm import tasks
current_app.amqp.queues.select([settings.CELERY_TASK_DEFAULT_QUEUE])  # celery worker -Q <the default queue>
tasks._warm_up()
assert "openai" not in sys.modules, "a worker of the default queue imported openai"
current_app.amqp.queues.select([settings.CELERY_LLM_QUEUE])  # celery worker -Q <the LLM queue>
tasks._warm_up()
assert "openai" in sys.modules, "a worker of the LLM queue did not import openai before consuming"
"""


def test_only_a_worker_of_the_llm_queue_imports_openai_at_its_start():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "SECRET_KEY": "x"}
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
