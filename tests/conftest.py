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
# Debian's Chromium: its headless shell (package chromium-headless-shell, the build Playwright itself runs headless)
# when installed, else the browser (package chromium) in its headless mode. The shell is the same Chromium without
# the browser's window machinery: the browser tests used 2.4 times less of Chromium's CPU time (30.5 -> 12.8 s on
# tests/test_browser_touch.py), a fifth of the browser tests' time. CHROMIUM=/usr/bin/chromium chooses the browser.
HEADLESS_SHELL = "/usr/bin/chromium-headless-shell"
CHROMIUM = os.environ.get("CHROMIUM") or (HEADLESS_SHELL if Path(HEADLESS_SHELL).exists() else "/usr/bin/chromium")
# Playwright's sync API runs an event loop in the test thread; the ORM calls in browser tests are safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def pytest_configure(config):
    """Accounts made by tests are hashed with a fast hasher: PBKDF2's 1,000,000 iterations cost a third of a second
    of CPU per account, which the suite pays hundreds of times and which tests nothing here. (Servers and workers the
    tests start in their own processes keep the real settings.)"""
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher",
                                 *[h for h in settings.PASSWORD_HASHERS if "MD5" not in h]]
    if settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        _flush_postgresql_by_delete()
    _share_demo_copies(config)


def _share_demo_copies(config) -> None:
    """In the process that starts the run's test processes: a folder where they share their copies of the demo
    (tests/demo_world.py), removed when the run ends."""
    import shutil
    import tempfile

    from tests.demo_world import SHARED

    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None) or os.environ.get(SHARED):
        return
    folder = tempfile.mkdtemp(prefix="minicex-demo-copies-")
    os.environ[SHARED] = folder
    config.add_cleanup(lambda: (os.environ.pop(SHARED, None), shutil.rmtree(folder, ignore_errors=True)))


def _flush_postgresql_by_delete() -> None:
    """Transactional tests end with a flush, which is one ``TRUNCATE`` of every table on PostgreSQL: 0.2-0.5 s for
    the app's 75 tables, as it makes every table a new file, whatever it holds. The few rows a test leaves are
    deleted in 12-25 ms instead (in the flush's transaction; every foreign key is deferred, so in any order). A flush
    that resets sequences keeps Django's statement.

    Unlike ``TRUNCATE``, ``DELETE`` does not lock a table against writers: a row another connection commits between
    two of the statements (a worker's, a request's) can leave a deleted row referenced, and the flush's commit fails.
    The flush is then run again, on the rows that are there now."""
    from django.db import IntegrityError
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncate = DatabaseOperations.sql_flush
    execute = DatabaseOperations.execute_sql_flush

    def execute_sql_flush(self, sql_list):
        for attempt in range(4):
            try:
                return execute(self, sql_list)
            except IntegrityError:
                if attempt == 3:
                    raise
                time.sleep(0.2 * (attempt + 1))

    DatabaseOperations.execute_sql_flush = execute_sql_flush

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences:
            return truncate(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        return [f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(table))};" for table in tables]

    DatabaseOperations.sql_flush = sql_flush


DB_FIXTURES = ("db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback", "live_server")


def pytest_itemcollected(item):
    """A test that reaches the database only through ``demo_scope`` is marked as a database test, as if it asked for
    ``db``: pytest-django then sets the test database up for it when it runs alone, and orders it with the database
    tests, ahead of the transactional ones, whose flush removes the migrations' rows."""
    names = getattr(item, "fixturenames", ())
    if "demo_scope" in names and not any(name in names for name in DB_FIXTURES):
        item.add_marker(pytest.mark.django_db)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """After pytest-django's order (database tests, then transactional ones, then the rest): the integration tests
    that use no test database (they start their own processes: ``make run``, ``migrate`` on a database of their
    own) go first. Last, one of them kept a single test process busy for minutes while the other sat idle."""

    def own_processes_only(item) -> bool:
        names = getattr(item, "fixturenames", ())
        return (item.get_closest_marker("integration") is not None and item.get_closest_marker("django_db") is None
                and not any(name in names for name in (*DB_FIXTURES, "demo_scope")))

    first = [item for item in items if own_processes_only(item)]
    if first:
        moved = {id(item) for item in first}
        items[:] = first + [item for item in items if id(item) not in moved]


@pytest.fixture(autouse=True)
def _instance_language():
    """Each test starts in the instance's language: a request activates its reader's language in the thread and
    leaves it there (as Django's LocaleMiddleware does), so without this a test after a Chinese page would read
    gettext's Chinese outside any request."""
    from django.utils import translation

    translation.deactivate()
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def _project_scope(request):
    """Tests of project data run in the project "Default" (the one the migrations create for the library scales),
    as a request runs in its project: queries in the test body see its rows, and rows created without a project
    belong to it. A test about several projects says where it works (``in_project``/``scopes_disabled``). Requests
    the test makes start without a scope and enter their own, as in production."""
    from projects import scoping

    names = request.fixturenames
    if not (any(name in names for name in DB_FIXTURES) or request.node.get_closest_marker("django_db")):
        scoping.restore(None)
        yield None
        scoping.restore(None)
        return
    if not request.node.get_closest_marker("shared_live_world"):  # that world is its module's, committed
        request.getfixturevalue("transactional_db" if "transactional_db" in names or "live_server" in names else "db")
    from projects.models import Project
    from tests.factories import default_project

    with scoping.scopes_disabled():
        project = Project.objects.filter(name="Default").first()
        if project is None:  # an earlier transactional test of this process flushed the migrations' rows
            restore_migration_rows()
            project = default_project()
    with scoping.in_project(project):
        yield project
    scoping.restore(None)




@pytest.fixture
def across_projects(_project_scope):
    """For tests about several projects: the test body reads every project's rows (as the Django admin does); the
    requests it makes still enter their own project. Rows it creates must name their project or be made inside
    ``in_project``."""
    from projects import scoping

    with scoping.scopes_disabled():
        yield


@pytest.fixture
def demo_scope(request, _project_scope):
    """For tests of the demo: the test body works in the demo's own project ("Demo (synthetic)"), as its users do."""
    from projects import scoping
    from projects.services import demo_project

    if "transactional_db" not in request.fixturenames and "live_server" not in request.fixturenames:
        request.getfixturevalue("db")
    with scoping.scopes_disabled():
        project = demo_project()
    with scoping.in_project(project):
        yield project


def forget_cached_ids() -> None:
    """Per-process caches keyed by ids (scale versions, runs, dialogues), which rolled-back or emptied test
    databases hand out again."""
    from annotation import labels, scales
    from scoring.judges import runs

    labels._allowed.cache_clear()
    scales.rating_sheet.cache_clear()
    runs._contexts.clear()
    runs._dialogue_cache.clear()
    runs._version_seen[:] = [0.0, 0]


@pytest.fixture(autouse=True)
def _fresh_item_cache():
    forget_cached_ids()
    yield
    forget_cached_ids()


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
def make_user(db, _project_scope):
    """Accounts with a role in the tests' project ("Default"; administrators are instance-wide)."""
    from tests.factories import make_account

    def make(username: str, role: str | None = None, password: str = "correct-horse-battery", **extra):
        return make_account(username, role, _project_scope, password=password, **extra)

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
        """Until the worker's log says it is ready, then (on the shared broker) until it answers a ping. A ping
        waits out its whole timeout while no worker answers: pinging a worker still starting cost 0.25 s a start on
        average, forty starts a pass."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited early:\n{self.log_path.read_text()[-3000:]}")
            if f"{self.name} ready." not in self.log_path.read_text(errors="replace"):
                time.sleep(0.05)
            # on a broker of its own the test cannot ping it: its log is the answer
            elif self.own_broker or self.app.control.ping(destination=[self.name], timeout=0.5):
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
        pytest.fail(f"Browser tests need Debian's Chromium at {CHROMIUM}: apt-get install chromium-headless-shell "
                    "(or chromium)")
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


def restore_migration_rows() -> None:
    """Make again what the data migrations made and a flush removed: the project "Default", in it the published
    Mini-CEX v1, and the default LLM endpoint (OPENAI_BASE_URL) granted to it. A flush ends a module that shares one
    committed world (``shared_live_world``); pytest-django runs such modules among the ordinary database tests,
    which expect the migrated rows."""
    import importlib

    from django.apps import apps

    from annotation import models
    from annotation.scales import load_instrument, read_instrument
    from projects import scoping
    from scoring.llm.models import LLMEndpoint
    from tests.factories import default_project

    project = default_project()
    with scoping.in_project(project):
        load_instrument(read_instrument(), models, publish=True)
    # the migration's own function (it reads only the endpoint and judge models, which the app registry has)
    with scoping.scopes_disabled():
        importlib.import_module("scoring.migrations.0005_llm_endpoints").endpoints_from_judges(apps, None)
        for endpoint in LLMEndpoint.objects.all():
            endpoint.projects.add(project)


@contextlib.contextmanager
def shared_live_world(django_db_blocker, build):
    """For a module of browser tests that share one world (built once, as tests/two_projects.py and
    tests/test_judge_report.py share theirs): database access for the whole module, and a live server of the
    module's own, whose thread reads what the module writes (so the world is committed, not rolled back: the
    session's ``live_server`` would flush the database after every test). At the end the database is flushed, as
    a transactional test leaves it. ``build(url)`` builds the world (in the project "Default"), given the server's
    address; its result is yielded.

    The module marks its tests ``django_db`` (so that pytest-django creates the test database even when the module
    runs alone) and ``shared_live_world``, and overrides pytest-django's ``_django_db_marker`` with a fixture that
    does nothing: no test runs in a transaction of its own, which the server's thread could not see into. Tests and
    the world run in the project "Default", as other tests do (``_project_scope``)."""
    from django.core.management import call_command
    from django.db import connection, connections
    from django.db.backends.base.creation import TEST_DATABASE_PREFIX

    from projects import scoping
    from tests.factories import default_project
    from tests.live_server import start_live_server

    name = str(connection.settings_dict["NAME"])
    if name != str(connection.settings_dict["TEST"].get("NAME")) and not name.startswith(TEST_DATABASE_PREFIX):
        pytest.fail(f"not on a test database ({name}): mark the module's tests django_db")
    with django_db_blocker.unblock():
        server = start_live_server("localhost")
        server._live_server_modified_settings.enable()
        try:
            with scoping.scopes_disabled():  # "Default", as _project_scope has it
                project = default_project()
            with scoping.in_project(project):
                world = build(server.url)
            yield world
        finally:
            server._live_server_modified_settings.disable()
            server.stop()
            call_command("flush", interactive=False, verbosity=0)
            restore_migration_rows()  # the tests that follow in this process expect a migrated database
            # as a transactional test ends: close the connections (while Playwright's event loop runs, this thread
            # has connections of its own, which would keep the test database from being dropped at the end)
            connections.close_all()


def ensure_mini_cex():
    """The project "Default" and in it the published Mini-CEX v1, as the data migrations leave them (idempotent): a
    transactional test that ran earlier in this process may have flushed them with the rest."""
    from annotation import models
    from annotation.scales import load_instrument, read_instrument
    from projects.scoping import in_project
    from tests.factories import default_project

    project = default_project()
    with in_project(project):
        load_instrument(read_instrument(), models, publish=True, project=project)


def module_world(django_db_blocker, build):
    """Generator for a module-scoped fixture: the world ``build()`` returns, built once inside a transaction that is
    rolled back at the end (each test still runs in its own savepoint through the ``db`` fixture).

    The world's deferred foreign-key checks are run once, right after it is built. Django's TestCase runs them at
    each test's end (``SET CONSTRAINTS ALL IMMEDIATE`` on PostgreSQL), and PostgreSQL queues the checks it ran inside
    a savepoint again when the savepoint is rolled back: without this, every test re-checked every row of the world
    (9 ms a test in the cross-project matrix, a fifth of its time)."""
    from django.db import connection, transaction

    from annotation import labels, scales

    with django_db_blocker.unblock():
        atomic = transaction.atomic()
        atomic.__enter__()
        try:
            labels._allowed.cache_clear()
            scales.rating_sheet.cache_clear()
            ensure_mini_cex()
            world = build()
            connection.check_constraints()
            yield world
        finally:
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)
            labels._allowed.cache_clear()
            scales.rating_sheet.cache_clear()


@pytest.fixture(scope="session")
def live_server(request):
    """pytest-django's live server, whose request threads hand their database connections on (tests/live_server.py)."""
    from tests.live_server import start_live_server

    server = start_live_server(request.config.getvalue("liveserver")
                               or os.getenv("DJANGO_LIVE_TEST_SERVER_ADDRESS") or "localhost")
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _live_server_helper(request):
    """pytest-django's (a test of the live server runs on a transactional database, with the server's host allowed),
    and the server's idle database connections closed when the test ends."""
    if "live_server" not in request.fixturenames:
        yield
        return
    from tests.live_server import close_idle_connections

    request.getfixturevalue("transactional_db")
    server = request.getfixturevalue("live_server")
    server._live_server_modified_settings.enable()
    try:
        yield
    finally:
        server._live_server_modified_settings.disable()
        close_idle_connections(server)


@contextlib.contextmanager
def browser_page(browser, base_url: str, **context_options):
    """A page in a context of its own (``context_options``: viewport, has_touch, is_mobile, ...), failing on any
    Content-Security-Policy violation it reports (the ``page`` fixture's page, on the session's live server)."""
    options = {"viewport": {"width": 1280, "height": 900}, **context_options}
    context = browser.new_context(base_url=base_url, **options)
    context.set_default_timeout(15_000)
    page = context.new_page()
    violations = watch_csp(page)
    try:
        yield page
    finally:
        context.close()
    assert violations == [], "the page broke its Content-Security-Policy"


@pytest.fixture
def page(browser, live_server, transactional_db, instrument):
    with browser_page(browser, live_server.url) as pg:
        yield pg


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
