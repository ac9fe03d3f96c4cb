"""Shared fixtures: users per role, a real Celery worker process, a real browser."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import settings
from django.core.cache import cache

BASE_DIR = Path(__file__).resolve().parent.parent
ARTIFACTS = BASE_DIR / "test-artifacts"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# Playwright's sync API runs an event loop in the test thread; the ORM calls in browser tests are safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(autouse=True)
def _no_working_project_left_behind():
    """A command's ``--project`` (annotation.projects.for_command) sets the working project for the rest of the
    process: in a test process that would be the next test's default project (an id a rolled-back database no
    longer has). Each test starts with none and leaves none."""
    from annotation.models import WORKING_PROJECT

    token = WORKING_PROJECT.set(None)
    yield
    WORKING_PROJECT.reset(token)


@pytest.fixture(autouse=True)
def _fresh_item_cache():
    """Per-process caches keyed by ids (scale versions, runs, dialogues): test databases reuse ids."""
    from annotation import labels, scales
    from scoring.judges import runs

    def clear() -> None:
        labels._allowed.cache_clear()
        scales.rating_sheet.cache_clear()
        # per-process caches keyed by run and dialogue ids, which rolled-back test databases hand out again
        runs._contexts.clear()
        runs._dialogue_cache.clear()
        runs._version_seen[:] = [0.0, 0]

    clear()
    yield
    clear()


@pytest.fixture
def fake_llm():
    """A fake OpenAI-compatible endpoint on loopback answering the Mini-CEX judge's questions."""
    from tests.fake_openai import FakeOpenAI, mini_cex_answer

    with FakeOpenAI(responder=mini_cex_answer) as server:
        yield server


@pytest.fixture(autouse=True)
def _clear_cache():
    """Login throttling counts live in the cache: every test starts from zero."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def instrument(db):
    """The Mini-CEX v1 as the data migration loads it. Transactional tests flush the database,
    migration data included, so they ask for it again (idempotent)."""
    from annotation import models
    from annotation.scales import load_instrument, read_instrument

    return load_instrument(read_instrument(), models)


@pytest.fixture
def make_user(db):
    from django.contrib.auth import get_user_model

    from annotation.roles import assign_role

    def make(username: str, role: str | None = None, password: str = "correct-horse-battery", **extra):
        user = get_user_model().objects.create_user(username=username, password=password, **extra)
        if role:
            assign_role(user, role)
        return user

    return make


@pytest.fixture
def physician(make_user):
    return make_user("dr_p", "physician")


@pytest.fixture
def coordinator(make_user):
    return make_user("coord", "coordinator")


@pytest.fixture
def analyst(make_user):
    return make_user("ana", "analyst")


@pytest.fixture
def admin_user(make_user):
    return make_user("root", "admin", is_superuser=True)


def worker_env() -> dict[str, str]:
    """Environment for a worker subprocess that uses the test database and the same broker."""
    from django.db import connection

    db = connection.settings_dict
    env = os.environ.copy()
    if db["ENGINE"].endswith("postgresql"):
        auth = quote(db["USER"] or "")
        if db.get("PASSWORD"):
            auth += ":" + quote(db["PASSWORD"])
        env["DATABASE_URL"] = f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    else:
        env["DATABASE_URL"] = f"sqlite:///{db['NAME']}"
    env["SECRET_KEY"] = settings.SECRET_KEY
    env["CELERY_TASK_DEFAULT_QUEUE"] = settings.CELERY_TASK_DEFAULT_QUEUE
    env["CELERY_LLM_QUEUE"] = settings.CELERY_LLM_QUEUE
    env["MINICEX_VAR_DIR"] = str(settings.VAR_DIR)
    return env


class WorkerProcess:
    """A real ``celery worker`` process started for a test."""

    def __init__(self, pool: str = "solo", concurrency: int = 1, env: dict[str, str] | None = None,
                 celery_app: str = "config"):
        from config.celery import app

        self.app = app
        self.name = f"test-{uuid.uuid4().hex[:8]}@{socket.gethostname()}"
        ARTIFACTS.mkdir(exist_ok=True)
        self.log_path = ARTIFACTS / f"worker-{self.name.split('@')[0]}.log"
        self.log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        cmd = [sys.executable, "-m", "celery", "-A", celery_app, "worker", "--pool", pool,
               "--concurrency", str(concurrency), "-n", self.name, "--loglevel", "INFO",
               "-Q", f"{settings.CELERY_TASK_DEFAULT_QUEUE},{settings.CELERY_LLM_QUEUE}",
               "--without-mingle", "--without-gossip"]
        self.own_broker = bool(env and "CELERY_BROKER_URL" in env)
        self.proc = subprocess.Popen(cmd, cwd=BASE_DIR, env={**worker_env(), **(env or {})}, stdout=self.log,
                                     stderr=subprocess.STDOUT)

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited early:\n{self.log_path.read_text()[-3000:]}")
            if self.own_broker:  # on a broker of its own the test cannot ping it: its log says when it is ready
                if f"{self.name} ready." in self.log_path.read_text(errors="replace"):
                    return
                time.sleep(0.2)
            elif self.app.control.ping(destination=[self.name], timeout=0.5):
                return
        raise RuntimeError(f"worker not ready after {timeout} s:\n{self.log_path.read_text()[-3000:]}")

    def kill(self) -> None:
        """SIGKILL: the worker dies mid-task, as on a crashed machine."""
        self.proc.kill()
        self.proc.wait()
        self.log.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self.log.closed:
            self.log.close()


def purge_queues() -> None:
    """Drop messages left by earlier runs in both test queues."""
    from config.celery import app

    with app.connection_for_write() as conn:
        for queue in (settings.CELERY_TASK_DEFAULT_QUEUE, settings.CELERY_LLM_QUEUE):
            with contextlib.suppress(Exception):  # the queue may not exist yet
                conn.default_channel.queue_purge(queue)


@pytest.fixture
def celery_worker(transactional_db, instrument):
    """Start a real worker on the test database; purge stale messages of earlier runs first."""

    purge_queues()
    worker = WorkerProcess()
    try:
        worker.wait_ready()
        yield worker
    finally:
        worker.stop()


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Browser tests need Debian's chromium at {CHROMIUM}: apt-get install chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        instance = pw.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"],
        )
        yield instance
        instance.close()


def watch_csp(page) -> list[str]:
    """The Content-Security-Policy violations the page reports (the app must cause none)."""
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    return violations


def wait_js(page, expression: str, timeout: float = 15.0) -> None:
    """Wait until a JavaScript expression (or function) is true in the page. Playwright's wait_for_function polls
    with eval inside the page, which the app's Content-Security-Policy forbids; page.evaluate runs through the
    DevTools protocol, outside the policy."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"not true after {timeout:g} s: {expression}")
        time.sleep(0.1)


@pytest.fixture
def page(browser, live_server, transactional_db, instrument):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    pg = context.new_page()
    violations = watch_csp(pg)
    yield pg
    context.close()
    assert violations == [], "the page broke its Content-Security-Policy"


def wait_until(predicate, timeout: float, message: str) -> None:
    """Poll ``predicate`` until it holds; fail with ``message`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(message)


@pytest.fixture
def workers(transactional_db, instrument):
    """Start real Celery worker processes (threads pool) on demand; stopped after the test."""
    started: list[WorkerProcess] = []
    purge_queues()

    def start(concurrency: int = 4, env: dict[str, str] | None = None, app: str = "config") -> WorkerProcess:
        worker = WorkerProcess(pool="threads", concurrency=concurrency, env=env, celery_app=app)
        started.append(worker)
        worker.wait_ready()
        return worker

    yield start
    for worker in started:
        if worker.proc.poll() is None:
            worker.stop()
