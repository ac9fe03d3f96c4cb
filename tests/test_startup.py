"""Bad configuration stops start-up with one clear line, not a traceback."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

BASE_DIR = Path(__file__).resolve().parent.parent


def fresh_env(tmp_path, **env) -> dict[str, str]:
    """A new user's environment (nothing set: the embedded mode) with its files in ``tmp_path``."""
    clean = {k: v for k, v in os.environ.items()
             if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY", "DEBUG", "CACHE_URL"}}
    clean["MINICEX_VAR_DIR"] = str(tmp_path)
    clean.update(env)
    return clean


def run(args, tmp_path, **env):
    return subprocess.run([sys.executable, *args], cwd=BASE_DIR, env=fresh_env(tmp_path, **env), capture_output=True,
                          text=True, timeout=60)


def assert_one_line_error(result, *fragments):
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.mark.integration
def test_missing_secret_key_in_production(tmp_path):
    result = run(["manage.py", "check"], tmp_path, DATABASE_URL="postgres://postgres@127.0.0.1:5432/x",
                 CELERY_BROKER_URL="redis://127.0.0.1:6379/0")
    assert_one_line_error(result, "SECRET_KEY")


@pytest.mark.integration
def test_malformed_database_url(tmp_path):
    result = run(["-m", "config.run", "worker"], tmp_path, DATABASE_URL="mysqlish://nowhere", SECRET_KEY="k")
    assert_one_line_error(result, "DATABASE_URL")


@pytest.mark.integration
def test_unreachable_database(tmp_path):
    result = run(["-m", "config.run", "web"], tmp_path, SECRET_KEY="k",
                 DATABASE_URL="postgres://postgres@127.0.0.1:1/minicex", CELERY_BROKER_URL="redis://127.0.0.1:6379/0")
    assert_one_line_error(result, "cannot connect to the database", "127.0.0.1:1", "DATABASE_URL")


@pytest.mark.integration
def test_unreachable_broker(tmp_path):
    result = run(["-m", "config.run", "worker"], tmp_path, SECRET_KEY="k",
                 DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3", CELERY_BROKER_URL="redis://127.0.0.1:1/0")
    assert_one_line_error(result, "cannot reach the Celery broker", "CELERY_BROKER_URL")


@pytest.mark.integration
def test_unapplied_migrations_are_reported(tmp_path):
    result = run(["-m", "config.run", "worker"], tmp_path)
    assert_one_line_error(result, "manage.py migrate")


@pytest.mark.integration
def test_bad_boolean(tmp_path):
    result = run(["manage.py", "check"], tmp_path, DEBUG="maybe")
    assert_one_line_error(result, "DEBUG")


@pytest.mark.integration
def test_make_run_migrates_loads_the_demo_and_serves_the_first_page_then_stops(tmp_path):
    """What `make run` runs after installing: one process migrates and loads the demo data (each phase printed with
    its time) while the web server starts; the workers follow once the login page answers; Ctrl-C stops all."""
    import signal
    import socket
    import threading
    import time
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = fresh_env(tmp_path)
    process = subprocess.Popen([sys.executable, "-m", "config.run", "dev", "--migrate", "--demo", "--port", str(port)],
                               cwd=BASE_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(line.rstrip("\n") for line in process.stdout), daemon=True)
    reader.start()
    try:
        deadline, status = time.monotonic() + 240, None
        while time.monotonic() < deadline and process.poll() is None and status != 200:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=5) as response:
                    status = response.status
            except OSError:
                time.sleep(0.3)
        assert status == 200, "\n".join(lines[-30:])
        # the workers and the banner (with the demo's logins) as soon as the page answers, while the demo may still
        # be loading: stop once all three are there
        while time.monotonic() < deadline and not ("Starting the workers." in lines
                                                   and any("physician / physician-demo" in line for line in lines)
                                                   and any(line.startswith("==> demo data: ") for line in lines)):
            time.sleep(0.3)
    finally:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            raise
        reader.join(timeout=10)
    output = "\n".join(lines)
    for phase in ("migrate", "demo data", "web server"):
        assert f"==> {phase}: " in output, output[-3000:]
    assert "physician / physician-demo" in output and "Demo Delphi study ready" in output
    # the banner came as soon as the login page answered, before the demo data was in
    assert output.index("Mini-CEX Workbench is up at") < output.index("==> demo data: "), output[-3000:]
    assert "Stopped the web server and the workers." in output and process.returncode == 0


@pytest.mark.integration
def test_ctrl_c_while_migrating_stops_with_one_line_and_the_next_start_goes_on(tmp_path):
    """A newcomer who presses Ctrl-C while `make run` migrates gets one line, not a traceback, and exit code 130;
    the next start migrates the rest, or builds again a first database stopped half-way (CI once saw the database
    left with part of the history recorded and the next `migrate` fail). The next test covers an interrupt Python
    drops."""
    import signal
    import time

    env = fresh_env(tmp_path)
    process = subprocess.Popen([sys.executable, "-m", "config.run", "dev", "--migrate", "--no-fake-llm", "--port",
                                "1"], cwd=BASE_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True,
                               # as in a terminal, whatever this test process inherited for SIGINT
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines = []
    for line in process.stdout:
        lines.append(line.rstrip("\n"))
        if line.startswith("==> migrate"):
            break
    time.sleep(0.2)  # inside the migrations (they take seconds on a fresh database)
    os.killpg(process.pid, signal.SIGINT)
    try:
        output = "\n".join([*lines, process.communicate(timeout=60)[0]])
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise
    # Stopped inside the migrations, or right after them when Python dropped the interrupt (it does when it lands in
    # a garbage collector's callback): never the app started, never a traceback.
    assert process.returncode == 130 and "Traceback" not in output, output[-3000:]
    assert "Stopped (Ctrl-C) before the app started." in output
    assert "==> web server" not in output and "Press Ctrl-C" not in output, output[-3000:]
    assert_next_start_migrates(tmp_path)


def assert_next_start_migrates(tmp_path) -> None:
    """The next `make run` (its start, up to the app) migrates and leaves a complete database, nothing beside it."""
    result = run(["-c", "from config.run import preflight; preflight(migrate=True)"], tmp_path)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stdout + result.stderr
    result = run(["manage.py", "migrate", "--check"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(path.name for path in tmp_path.glob("db.sqlite3*")) == ["db.sqlite3"]


@pytest.mark.integration
def test_a_database_migrate_refuses_stops_the_start_with_its_message_in_one_line(tmp_path):
    """A database whose first `migrate` stopped between the squashed migrations (made by `manage.py migrate`, or on
    PostgreSQL, where it is not built under another name): `make run` says what `migrate` says, not a traceback."""
    made = run(["manage.py", "migrate", "projects", "0003_squashed", "--no-input"], tmp_path)
    assert "its first `migrate` was interrupted" in made.stderr  # said at once, after projects' migration
    result = run(["-c", "from config.run import preflight; preflight(migrate=True)"], tmp_path)
    assert_one_line_error(result, "its first `migrate` was interrupted", "delete it")


# A first start stopped (as by Ctrl-C) while migrating, after the given number of migrations.
START_STOPPED_WHILE_MIGRATING = """
import sys
from django.db.migrations.executor import MigrationExecutor
from config import run
real, applied, stop = MigrationExecutor.apply_migration, [], int(sys.argv[1])
def apply_migration(self, state, migration, **kwargs):
    if len(applied) == stop:
        raise KeyboardInterrupt
    applied.append(migration)
    return real(self, state, migration, **kwargs)
MigrationExecutor.apply_migration = apply_migration
sys.argv[1:] = ["dev", "--migrate", "--port", "1"]
try:
    run.main()
except KeyboardInterrupt:
    sys.exit(run.interrupted())
"""


@pytest.mark.integration
@pytest.mark.parametrize("migrations", [7, 36], ids=["between-the-squashed", "after-them"])
def test_a_first_start_stopped_while_migrating_leaves_no_half_built_database(tmp_path, migrations):
    """Stopped between the squashed migrations (after projects', in the order `migrate` runs them; the next `migrate`
    could not go on from there: the history reads as applied with tables missing) or after them: the embedded
    database is built under another name, so nothing half-built is left and the next start builds it."""
    result = run(["-c", START_STOPPED_WHILE_MIGRATING, str(migrations)], tmp_path)
    assert result.returncode == 130 and "Stopped (Ctrl-C) before the app started." in result.stderr, \
        result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert_next_start_migrates(tmp_path)


def test_a_ctrl_c_python_drops_in_a_garbage_collector_callback_still_stops_the_start(monkeypatch, capsys):
    """Python drops a KeyboardInterrupt raised while a weak reference's callback runs (printing "Exception ignored"
    with a traceback): CI once lost a Ctrl-C that way in the middle of `migrate`, and the app started. The start
    notes the interrupt, prints nothing for the dropped exception, and stops after the phase."""
    import signal
    import weakref

    from config import run as start

    monkeypatch.setattr(start, "_interrupts", [])
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)
    previous = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        start.catch_interrupts()
        assert sys.unraisablehook is start._unraisable

        class Phase:
            pass

        work = Phase()
        watch = weakref.ref(work, lambda _: signal.raise_signal(signal.SIGINT))
        del work  # the callback runs now, and the interrupt is raised inside it
        assert watch() is None and start._interrupts == [signal.SIGINT]
        with pytest.raises(KeyboardInterrupt):
            start.stop_if_interrupted()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert "Traceback" not in capsys.readouterr().err and start.interrupted() == 130
    assert "Stopped (Ctrl-C) before the app started" in capsys.readouterr().err


def test_the_web_process_starts_without_the_statistics_stack(tmp_path):
    """Django's set-up and every URL module import without pandas, scipy, pingouin or matplotlib: they cost seconds
    of a new user's first page and load when a report, an analysis or a table is first computed."""
    code = ("import sys, django; django.setup(); from django.urls import resolve; resolve('/'); "
            "print(' '.join(m for m in ('pandas', 'scipy', 'pingouin', 'matplotlib') if m in sys.modules))")
    result = run(["-c", code], tmp_path, SECRET_KEY="k", DJANGO_SETTINGS_MODULE="config.settings")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"loaded at start-up: {result.stdout.strip()}"


def test_commands_and_workers_start_without_the_api_schema_library(tmp_path):
    """drf-spectacular describes the API for /api/schema/ only, and DRF's serializers serve the API: Django's set-up
    (every manage.py command and worker process) does without them, a few tenths of a second of each start."""
    code = ("import sys, django; django.setup(); print(' '.join(m for m in "
            "('drf_spectacular.plumbing', 'rest_framework.serializers') if m in sys.modules))")
    result = run(["-c", code], tmp_path, SECRET_KEY="k", DJANGO_SETTINGS_MODULE="config.settings")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"loaded at start-up: {result.stdout.strip()}"
