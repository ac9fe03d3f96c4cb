"""Start the app: ``python -m config.run [dev|web|worker|fake-llm]``.

* ``dev`` (default, used by ``make run``): Django's server and a real Celery worker process together;
  Ctrl-C stops both. The web server starts first (the demo data loads meanwhile with ``--demo``) and the
  workers once it answers, so the first page comes sooner on a small machine. With ``--demo`` the built-in fake
  LLM endpoint starts too (``FAKE_LLM_PORT``, default 8001; ``--no-fake-llm`` leaves it out).
* ``web``: gunicorn serving ``config.wsgi`` (production; static files through whitenoise).
* ``worker``: one Celery worker; start as many as you like, on as many machines as you like.
* ``fake-llm``: the built-in fake OpenAI-compatible endpoint (synthetic answers, no key; scoring/llm/fake.py), to
  try judges, preference judging and generation without a provider.

Every mode first checks the settings, the database and the broker, and stops with one clear line
saying what to fix when one of them is wrong. ``--migrate`` applies the migrations and ``--demo`` loads the demo
data (``manage.py load_demo``) in the same process before starting, printing each phase's time
("==> phase: N.N s"), as ``make run`` does.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from core.site.workers import LLM_WORKER_CONCURRENCY, LLM_WORKER_POOL, llm_worker_hint  # noqa: F401 - named here too

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


class Console:
    """The launcher's one writer: its own lines (phases, the banner) and its children's, each line whole and in the
    order it comes. The children write into pipes this process reads (:meth:`follow`), so a worker's start-up
    banner never splits a phase line, and a child's buffered output does not come minutes after the line that
    followed it."""

    def __init__(self, stream=None) -> None:
        self.stream = stream
        self.lock = threading.Lock()

    def line(self, text: str) -> None:
        """``text`` (one line, or several such as the banner: nothing comes between them)."""
        with self.lock:
            stream = self.stream or sys.stdout
            stream.write(text + "\n")
            stream.flush()

    def start(self, command: list[str], **kwargs) -> subprocess.Popen:
        """A child process whose output (stdout and stderr) goes through this writer, unbuffered."""
        env = {**(kwargs.pop("env", None) or os.environ), "PYTHONUNBUFFERED": "1"}
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 errors="replace", bufsize=1, env=env, **kwargs)
        self.follow(child)
        return child

    def follow(self, child: subprocess.Popen) -> threading.Thread:
        def copy() -> None:
            with contextlib.suppress(ValueError, OSError):  # the pipe closed under us at exit
                for text in child.stdout:
                    self.line(text.rstrip("\n"))

        thread = threading.Thread(target=copy, daemon=True)
        thread.start()
        return thread


console = Console()


def phase(name: str, action):
    """Run ``action()`` between "==> name" and "==> name: N.N s" lines; returns its result."""
    console.line(f"==> {name}")
    start = time.perf_counter()
    result = action()
    console.line(f"==> {name}: {time.perf_counter() - start:.1f} s")
    return result


def preflight(migrate: bool = False) -> None:
    """Load settings and reach the database and the broker, or exit with one line. ``migrate`` applies
    unapplied migrations; otherwise they stop the start. Production mode also needs an e-mail backend chosen
    (the console one would print the Delphi panel links, redacted, instead of sending them)."""
    import django

    from config.errors import ConfigError, exit_with

    try:
        django.setup()
    except ConfigError as exc:
        exit_with(str(exc))
    from django.conf import settings

    from core.site.health import check_broker, check_database, redact_url

    db = check_database()
    if not db["ok"]:
        where = redact_url(settings.DATABASE_URL) if settings.DATABASE_URL else db["name"]
        exit_with(f"cannot connect to the database at {where} ({db['error']}). Check DATABASE_URL.")
    broker = check_broker()
    if not broker["ok"]:
        exit_with(
            f"cannot reach the Celery broker at {broker['url']} ({broker['error']}). Check CELERY_BROKER_URL."
        )
    if not settings.DEBUG and not settings.EMAIL_BACKEND_SET:
        exit_with("EMAIL_BACKEND is not set. In production mode (DEBUG off) e-mail, Delphi panel links included, "
                  "would only be printed to the log: set EMAIL_BACKEND=django.core.mail.backends.smtp.EmailBackend "
                  "with EMAIL_HOST (and EMAIL_PORT, EMAIL_HOST_USER, EMAIL_HOST_PASSWORD, EMAIL_USE_TLS), or "
                  "EMAIL_BACKEND=console to print messages with their links redacted.")
    if migrate:
        from django.core.management.base import CommandError

        try:
            phase("migrate", migrate_database)
        except CommandError as exc:  # a database `migrate` refuses, with why and what to do (projects.apps)
            exit_with(str(exc))
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    if executor.migration_plan(executor.loader.graph.leaf_nodes()):
        exit_with("the database has unapplied migrations: run `python manage.py migrate` first.")


def migrate_database() -> None:
    """``manage.py migrate``. An embedded (SQLite) database with no tables yet is built under another name and moved
    into place once complete: a first start stopped while migrating (Ctrl-C, a crash) leaves no half-built database,
    and the next start builds it again."""
    from django.core.management import call_command
    from django.db import connection

    name = connection.settings_dict["NAME"]
    if connection.vendor != "sqlite" or str(name) == ":memory:" or connection.introspection.table_names():
        call_command("migrate", interactive=False, verbosity=0)
        return
    final = Path(name)
    building = final.with_name(f"{final.name}.building")
    connection.close()
    _remove_sqlite_files(building)  # a start stopped earlier
    connection.settings_dict["NAME"] = building
    try:
        call_command("migrate", interactive=False, verbosity=0)
        with connection.cursor() as cursor:  # everything into the file itself, none left in a -wal file beside it
            cursor.execute("PRAGMA journal_mode=DELETE")
    finally:
        connection.close()
        connection.settings_dict["NAME"] = name
    _remove_sqlite_files(final, keep_main=True)  # the file is empty (the connection check made it)
    os.replace(building, final)


def _remove_sqlite_files(path: Path, keep_main: bool = False) -> None:
    for suffix in ("-wal", "-shm", "-journal") if keep_main else ("", "-wal", "-shm", "-journal"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


def banner(url: str, logins: list | None = None, loading: bool = False) -> str:
    """The lines a newcomer needs: where the app is, the demo logins (``logins``, by default read now), and how
    to stop; ``loading`` says the demo data is still loading."""
    from annotation.demo import demo_logins

    lines = [f"Mini-CEX Workbench is up at {url}"]
    logins = demo_logins() if logins is None else logins
    if logins:
        lines.append("Demo logins (username / password):")
        lines += [f"  {role:<12} {username} / {password}" for role, username, password in logins]
    if loading:
        lines.append("The demo data is still loading: its pages fill in as it comes (\"==> demo data: N s\" below).")
    lines.append("Press Ctrl-C to stop the web server and the workers.")
    width = max(len(line) for line in lines)
    rule = "=" * width
    return "\n".join([rule, *lines, rule])


def worker_command(concurrency: int | None, queues: str | None = None, pool: str | None = None,
                   name: str | None = None) -> list[str]:
    cmd = [sys.executable, "-m", "celery", "-A", "config", "worker", "--loglevel", "INFO"]
    if concurrency:
        cmd += ["--concurrency", str(concurrency)]
    if queues:
        cmd += ["--queues", queues]
    if pool:
        cmd += ["--pool", pool]
    if name:
        cmd += ["--hostname", name]
    return cmd


def default_queues() -> tuple[str, str]:
    from django.conf import settings

    return settings.CELERY_TASK_DEFAULT_QUEUE, settings.CELERY_LLM_QUEUE


def load_demo() -> None:
    from django.core.management import call_command

    phase("demo data", lambda: call_command("load_demo", no_logins=True))


def answers(host: str, port: int) -> bool:
    """True when something accepts connections on the server's port."""
    address = "127.0.0.1" if host in ("0.0.0.0", "") else ("::1" if host == "::" else host)
    with contextlib.suppress(OSError), socket.create_connection((address, port), timeout=0.5):
        return True
    return False


def serves_login_page(host: str, port: int) -> bool:
    """True when the server answers a request for the login page (any HTTP status counts as an answer)."""
    import urllib.error
    import urllib.request

    address = "127.0.0.1" if host in ("0.0.0.0", "") else ("[::1]" if host == "::" else host)
    try:
        with urllib.request.urlopen(f"http://{address}:{port}/accounts/login/", timeout=30):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


def fake_llm_command(port: int) -> list[str]:
    return [sys.executable, "-m", "config.run", "fake-llm", "--port", str(port)]


def write_bytecode() -> None:
    """Let this process and the ones it starts write the bytecode of what they import, even where the environment
    says not to (PYTHONDONTWRITEBYTECODE; some machines set it everywhere). On a fresh clone the web server, the
    demo loader and the workers otherwise each compile Django and the app from source: the web server alone took
    5.0 s to answer instead of 1.6 s, and three processes compiling at once on two cores delayed the first page
    more. (scripts/warm_bytecode.py writes the rest in the background.)"""
    sys.dont_write_bytecode = False
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def web_command(host: str, port: int, checked: bool) -> list[str]:
    """Django's server; the system checks ran with ``migrate`` a moment ago (``checked``): no need to repeat them."""
    return [sys.executable, "manage.py", "runserver", f"{host}:{port}", "--noreload",
            *(["--skip-checks"] if checked else [])]


#: The workers start this long after the web server at the latest, should its login page not answer.
WORKERS_AFTER = 60.0
#: With the demo loading, the banner waits this long at most for the demo accounts (the loader makes them first).
LOGINS_WAIT = 60.0


def run_dev(host: str, port: int, concurrency: int | None, demo: bool = False, fake_llm: int | None = None,
            checked: bool = False) -> int:
    """Web server and workers as child processes; stop all when one stops or on Ctrl-C.

    The web server starts first; ``demo`` data loads in this process meanwhile (two cores, two processes). Once the
    login page answers (logging in works then) the banner with the demo logins is printed (as soon as the loader
    has made the demo accounts, its first step), then the workers start, while the demo may still be loading: three
    processes importing the app at once would delay the first page by several seconds, and nothing needs a worker
    before then. Every line goes through :data:`console`, the children's too."""
    default_queue, llm_queue = default_queues()
    start = time.perf_counter()
    console.line("==> web server")
    children = [console.start(web_command(host, port, checked))]
    if fake_llm:
        children.extend(_start_fake_llm(fake_llm))
    web_up = threading.Event()  # the login page answered (or WORKERS_AFTER passed): the workers may start
    bannered = threading.Event()  # the first banner is out (or will not come): the workers start after it
    demo_loaded = threading.Event()
    banner_lock = threading.Lock()
    shown: list[list] = []  # the demo logins each banner showed
    received: list[int] = []
    stopping = threading.Event()
    started_workers = threading.Lock()

    def show_banner(final: bool = False) -> None:
        """The banner; again at the end (``final``) only when the demo brought logins the first one lacked."""
        from annotation.demo import demo_logins

        with banner_lock:
            logins = demo_logins()
            if shown and (not final or shown[-1] == logins):
                return
            loading = bool(demo) and not demo_loaded.is_set()
            console.line(banner(f"http://{host}:{port}", logins, loading=loading))
            shown.append(logins)

    def logins_ready() -> bool:
        from annotation.demo import demo_logins

        return bool(demo_logins())

    def watch_web() -> None:
        # Up is the login page served, not the port open: the first request imports the URLconf, the views and
        # the templates (seconds on a fresh clone), and workers starting meanwhile would slow it on two cores.
        try:
            up = _await_login_page(children[0], host, port, start, received, web_up)
            if up:
                console.line(f"==> web server: {time.perf_counter() - start:.1f} s")
            web_up.set()
            if up and not received:
                waited = time.perf_counter()
                while (demo and not demo_loaded.is_set() and not received and not logins_ready()
                       and time.perf_counter() - waited < LOGINS_WAIT):
                    time.sleep(0.5)  # the demo loader's first step makes the accounts
                if not received:
                    show_banner()
        finally:
            bannered.set()
            from django.db import connections

            connections.close_all()  # this thread's database connection

    def start_workers() -> None:
        web_up.wait()
        bannered.wait(LOGINS_WAIT + 5)
        with started_workers:
            if received or stopping.is_set() or children[0].poll() is not None:
                return
            console.line("Starting the workers.")
            children.extend([
                console.start(worker_command(concurrency, default_queue, name="default@%h")),
                console.start(worker_command(LLM_WORKER_CONCURRENCY, llm_queue, pool=LLM_WORKER_POOL,
                                             name="llm@%h")),
            ])

    threading.Thread(target=watch_web, daemon=True).start()
    threading.Thread(target=start_workers, daemon=True).start()

    def stop(signum, _frame) -> None:
        received.append(signum)

    code = 0
    try:
        try:
            if demo:
                load_demo()
            stop_if_interrupted()
        except KeyboardInterrupt:
            received.append(signal.SIGINT)
            return 130
        demo_loaded.set()
        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        final_banner = True
        while not received:
            if final_banner and bannered.is_set():
                final_banner = False
                if shown and children[0].poll() is None:
                    show_banner(final=True)  # the demo brought logins the first banner could not show
            exited = [child for child in children if child.poll() is not None]
            if exited:
                code = exited[0].returncode or 0
                break
            time.sleep(0.2)
    finally:
        with started_workers:  # no worker starts once we are stopping
            stopping.set()
        _stop_children(children, interrupted=bool(received) and received[0] == signal.SIGINT)
    return code


def _await_login_page(web: subprocess.Popen, host: str, port: int, start: float, received: list[int],
                      web_up: threading.Event) -> bool:
    """Whether the web server's login page answered (False: the server or this process was stopped first). Once
    :data:`WORKERS_AFTER` has passed since ``start``, the workers may start anyway (``web_up``)."""
    while web.poll() is None and not received:
        if answers(host, port) and serves_login_page(host, port):
            return True
        if time.perf_counter() - start >= WORKERS_AFTER:
            web_up.set()
        time.sleep(0.1)
    return False


def _start_fake_llm(port: int) -> list[subprocess.Popen]:
    """The demo's fake LLM endpoint on ``port``, unless something answers there already (then that is used)."""
    if answers("127.0.0.1", port):
        console.line(f"==> fake LLM endpoint: port {port} is taken; the demo's fake endpoint uses what "
                     "answers there (set FAKE_LLM_PORT to move it)")
        return []
    return [console.start(fake_llm_command(port))]


def _stop_children(children: list[subprocess.Popen], *, interrupted: bool) -> None:
    """Stop the web server and the workers: asked to (SIGTERM), then killed if they linger."""
    # Ctrl-C in a terminal reaches every process of the group, so the children are already stopping;
    # give them a moment before sending SIGTERM ourselves (as we must when only we were signalled).
    if interrupted:
        _wait_all(children, 5)
    for child in children:
        if child.poll() is None:
            child.terminate()
    _wait_all(children, 15)
    for child in children:
        if child.poll() is None:
            child.kill()
    console.line("Stopped the web server and the workers.")


def _wait_all(children: list[subprocess.Popen], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    for child in children:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=max(0.1, deadline - time.monotonic()))


def fake_llm_port() -> int:
    """FAKE_LLM_PORT, else the app's PORT + 1 (scoring/llm/fake.py)."""
    from scoring.llm.fake import default_port

    return default_port()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m config.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", nargs="?", default="dev", choices=["dev", "web", "worker", "fake-llm"])
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--web-workers", type=int, default=int(os.environ.get("WEB_CONCURRENCY", "3")))
    parser.add_argument("--concurrency", type=int, default=None, help="Celery worker processes")
    parser.add_argument("--queues", default=None, help="Celery queues to consume (comma-separated; default all)")
    parser.add_argument("--pool", default=None, help="Celery pool: prefork (default) or threads (for LLM calls)")
    parser.add_argument("--migrate", action="store_true", help="apply the database migrations first")
    parser.add_argument("--demo", action="store_true", help="load the demo data first (manage.py load_demo)")
    parser.add_argument("--no-fake-llm", action="store_true",
                        help="dev: do not start the built-in fake LLM endpoint beside the demo")
    args, rest = parser.parse_known_args(argv)
    if args.mode != "fake-llm":
        # The app's port, for the fake endpoint's (PORT + 1) here, in the demo loader and in every child process.
        os.environ["PORT"] = str(args.port)
    if args.mode == "fake-llm":  # no settings, database or broker needed
        from scoring.llm import fake

        return fake.main(rest + (["--port", str(args.port)] if "--port" in (argv or sys.argv[1:]) else
                                 ["--port", str(fake_llm_port())]) + ["--host", args.host])
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")

    if args.mode == "dev":
        write_bytecode()
    catch_interrupts()
    preflight(migrate=args.migrate)
    stop_if_interrupted()
    if args.mode == "dev":
        return run_dev(args.host, args.port, args.concurrency, demo=args.demo,
                       fake_llm=fake_llm_port() if args.demo and not args.no_fake_llm else None,
                       checked=args.migrate)
    if args.demo:
        load_demo()
        stop_if_interrupted()
    if args.mode == "web":
        from django.core.management import call_command

        call_command("collectstatic", interactive=False, verbosity=0)
        bind = f"{args.host}:{args.port}"
        os.execvp(sys.executable, [sys.executable, "-m", "gunicorn", "config.wsgi", "--bind", bind,
                                   "--workers", str(args.web_workers), "--access-logfile", "-",
                                   # personal panel links carry a token: the access log gets it redacted
                                   "--logger-class", "config.logredact.GunicornLogger"])
    queues = args.queues or ",".join(default_queues())
    os.execvp(sys.executable, worker_command(args.concurrency, queues, pool=args.pool))
    return 0  # not reached


_interrupts: list[int] = []


def _interrupt(signum, frame) -> None:
    """Ctrl-C before the app runs: noted, then raised. Python drops an exception raised while a garbage collector's
    callback runs (CI saw a Ctrl-C lost in a WeakSet's, and the migrations went on), so the note is checked again
    after each phase (:func:`stop_if_interrupted`) and the dropped exception is not printed."""
    _interrupts.append(signum)
    raise KeyboardInterrupt


def _unraisable(info) -> None:
    if info.exc_type is not None and issubclass(info.exc_type, KeyboardInterrupt):
        return  # noted by _interrupt; stop_if_interrupted acts on it
    sys.__unraisablehook__(info)


def catch_interrupts() -> None:
    """Ctrl-C is noted as well as raised until the app runs (unless this process was started with it ignored)."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupt)
        sys.unraisablehook = _unraisable


def stop_if_interrupted() -> None:
    if _interrupts:
        raise KeyboardInterrupt


def interrupted() -> int:
    """Ctrl-C before the app runs (while migrating, say): one line, not a traceback. Each migration is applied in
    a transaction, so the next start goes on from the last one done; an embedded database's first ``migrate``
    stopped half-way leaves none (:func:`migrate_database`), and the next start builds it again."""
    print("\nStopped (Ctrl-C) before the app started.", file=sys.stderr, flush=True)
    return 130


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(interrupted())
