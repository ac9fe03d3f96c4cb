"""Fault benchmarks: what users see while part of the system fails, and how fast it recovers.

Each fault is one function returning a row of figures; ``main`` runs the chosen faults and prints a table.
Faults so far:

* ``database_restart``: starts its own PostgreSQL cluster (``initdb`` and ``pg_ctl`` from
  /usr/lib/postgresql/*/bin, run as the ``postgres`` OS user when this runs as root, since initdb refuses root)
  on a free loopback port, migrates a fresh database, creates N physicians on a campaign, starts gunicorn
  against it and lets the N simulated raters save labels on the rating page's endpoint (POST /rate/<id>/label/,
  as static/js/answer_sheet.js does, including its retry queue: an unacknowledged click is sent again with
  backoff until the server acknowledges it). Mid-run the cluster is stopped (``pg_ctl stop -m fast``, which
  ends every connection: "the database system is shutting down"), kept down for ``--down`` seconds and
  started again. Printed: requests, 5xx answers other than 503 (must be 0), 503 answers, tracebacks in the
  server log, acknowledged saves missing from the database afterwards (must be 0), and the recovery time (from
  the database accepting connections again to the first acknowledged save).

* ``broker_restart``: a judge run goes on while its Redis broker (a ``redis-server`` of its own on a free port,
  without persistence) is killed and started again ``--broker-down`` seconds later; during the outage a second
  run is started and a report is asked for, and both messages die with the broker. Printed: the time after the
  broker is back until each resumed (recovery s: the slowest; target 30 s), judge units lost and requests sent
  twice (both must be 0). Uses the local PostgreSQL (a database ``minicex_faults_broker``) and real workers.

* ``worker_kill``: SIGKILL of the LLM worker (``--pool prefork --concurrency 2``, main and pool processes) during
  a judge run (``--kill-prompts`` 480, ``--kill-concurrency`` 32, ``--kill-latency`` 0.3 s, timeout 60 s); a new
  LLM worker starts ``--restart-after`` (3) seconds later. Printed: the time from the kill to the first request of
  the units the dead worker held (recovery s; target 15 s), the new engine's first heartbeat, the run's length,
  requests against its bound (target: within), units lost (target 0) and the most times one prompt was sent
  (target 2: those in flight at the kill once more). Uses the local PostgreSQL (``minicex_faults_kill``) and a
  Redis of its own.

* ``rolling_deploy``: two gunicorns and two worker "hosts" (a default and an LLM worker each; separate processes
  and var folders stand in for machines) on one PostgreSQL (``minicex_faults_deploy``) and a Redis of its own.
  While ``--deploy-raters`` (50) save labels, failing over between the web servers, and a judge run of
  ``--deploy-prompts`` (1,200) is in flight, each web server is restarted in turn, then each host's workers, then
  a column is added to the labels' table. Printed: saves acknowledged and lost (target 0), 5xx (target 0), refused
  connections (tried again), the judge run's answers and prompts sent twice (target 0).

Add a fault: write ``def my_fault(args) -> dict`` returning the same keys as ``database_restart`` (missing
ones print as "—"), and add it to ``FAULTS``.

Run:  .venv/bin/python bench/faults.py [--faults database_restart,broker_restart,worker_kill,rolling_deploy]
      [--raters 10] [--down 3.5] [--seconds 20] [--broker-down 2] [--restart-after 3] [--deploy-raters 50]
Exit status 0 when every fault ran and met its targets (no 5xx but 503, nothing lost), 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import http.client
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


# ---------------------------------------------------------------------------------------------------------------
# A PostgreSQL cluster of our own
# ---------------------------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def postgres_bin_dir() -> Path:
    """The newest /usr/lib/postgresql/<version>/bin holding initdb and pg_ctl."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                        key=lambda p: int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0)
    if candidates:
        return Path(candidates[-1]).parent
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    raise RuntimeError("initdb not found: install PostgreSQL's server package (Debian: postgresql)")


class PostgresCluster:
    """A throw-away cluster in a temporary directory on a free port (trust authentication, loopback only)."""

    def __init__(self, port: int | None = None):
        self.bin = postgres_bin_dir()
        self.port = port or free_port()
        self.root = Path(tempfile.mkdtemp(prefix="minicex-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"
        self.as_postgres = os.geteuid() == 0  # initdb refuses to run as root
        if self.as_postgres:
            shutil.chown(self.root, "postgres", "postgres")

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/postgres"

    def database_url(self, name: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        command = [str(self.bin / args[0]), *args[1:]]
        if self.as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, check=check, capture_output=True, text=True, timeout=120)

    def init(self) -> PostgresCluster:
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
        return self

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c max_connections=100"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.log), "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop", check=False)

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.database_url(name)

    def destroy(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PostgresCluster:
        self.init()
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.destroy()


# ---------------------------------------------------------------------------------------------------------------
# The app against that cluster
# ---------------------------------------------------------------------------------------------------------------
def app_env(database_url: str, var_dir: Path) -> dict[str, str]:
    """Production mode on the given database; cache per process (no Redis needed), no broker needed."""
    env = {k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "CACHE_URL", "DEBUG")}
    env.update(DATABASE_URL=database_url, SECRET_KEY=os.environ.get("SECRET_KEY") or "faults-bench-insecure-key",
               DEBUG="0", CACHE_URL="locmem://", MINICEX_VAR_DIR=str(var_dir), ALLOWED_HOSTS="127.0.0.1",
               DB_CONNECT_TIMEOUT="2", DJANGO_SETTINGS_MODULE="config.settings", PYTHONUNBUFFERED="1")
    return env


SETUP_SCRIPT = r"""
import json, sys
import django
django.setup()
from django.core.management import call_command
call_command("migrate", interactive=False, verbosity=0)  # in this process: one start of Django, not two
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from annotation.campaigns import add_rater, assign, create_campaign
from annotation.importers import import_dialogues
from annotation.labels import rating_items
from annotation.models import Assignment, Corpus, ScaleVersion
from projects.roles import assign_role, sync_roles
from projects.scoping import activate
from projects.services import create_project

raters, dialogues = int(sys.argv[1]), int(sys.argv[2])
sync_roles()
activate(create_project("Faults"))  # the rest of this script works in the project
corpus = Corpus.objects.create(name="faults")
import_dialogues(corpus, [json.dumps({"id": f"d{n}", "self_report": f"Complaint {n}", "model": "m",
                                      "turns": [{"role": "patient", "text": f"I feel unwell ({n})."},
                                                {"role": "doctor", "text": "Since when?"}]})
                          for n in range(dialogues)])
version = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
campaign = create_campaign(name="faults", corpus=corpus, scale_version=version, overlap=min(3, raters))
users = []
for n in range(raters):
    user = get_user_model().objects.create_user(f"rater{n}", password=None)
    assign_role(user, "physician")
    add_rater(campaign, user)
    users.append(user)
assign(campaign)
items = [[item_id, list(allowed)] for item_id, (code, allowed) in rating_items(version.pk).items()]
out = []
for user in users:
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "core.site.auth.CachedUserBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    out.append({"session": session.session_key,
                "assignments": list(Assignment.objects.filter(rater=user).order_by("position")
                                    .values_list("pk", flat=True))})
print(json.dumps({"raters": out, "items": items}))
"""


def prepare_database(database_url: str, var_dir: Path, raters: int, dialogues: int) -> dict:
    """Migrate the database and make the raters, their sessions and assignments (in one process)."""
    env = app_env(database_url, var_dir)
    done = subprocess.run([PYTHON, "-c", SETUP_SCRIPT, str(raters), str(dialogues)], cwd=BASE_DIR, env=env,
                          check=True, capture_output=True, text=True, timeout=600)
    return json.loads(done.stdout.strip().splitlines()[-1])


class Gunicorn:
    def __init__(self, database_url: str, var_dir: Path, workers: int = 2, port: int | None = None):
        self.port = port or free_port()
        self.log_path = var_dir / "gunicorn.log"
        self.log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [PYTHON, "-m", "gunicorn", "config.wsgi", "-w", str(workers), "-b", f"127.0.0.1:{self.port}",
             "--timeout", "30", "--graceful-timeout", "5"],
            cwd=BASE_DIR, env=app_env(database_url, var_dir), stdout=self.log, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited:\n{self.log_path.read_text(errors='replace')[-3000:]}")
            with contextlib.suppress(OSError):
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/accounts/login/")
                if conn.getresponse().status == 200:
                    return
            time.sleep(0.2)
        raise RuntimeError("gunicorn did not answer")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def tracebacks(self) -> int:
        return self.log_path.read_text(errors="replace").count("Traceback (most recent call last)")


# ---------------------------------------------------------------------------------------------------------------
# Simulated raters
# ---------------------------------------------------------------------------------------------------------------
CSRF = "f" * 32  # any 32-character secret: the cookie and the header carry the same value


@dataclass
class Tally:
    requests: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    errors: int = 0  # connection errors (no HTTP answer)
    acked: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)  # (assignment, item) -> (seq, value)
    ack_times: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, status: int | None) -> None:
        with self.lock:
            self.requests += 1
            if status is None:
                self.errors += 1
            else:
                self.statuses[status] = self.statuses.get(status, 0) + 1


def rater_loop(port: int | list[int], session: str, assignments: list[int], items: list, until: float,
               tally: Tally, seed: int, stop: threading.Event | None = None) -> None:
    """Click answers one after the other; an unacknowledged click is retried (backoff) until acknowledged,
    like the rating page's outbox. Stops at ``until`` (a click in flight is finished first). With several ports
    (web servers behind a load balancer), a connection that fails goes to the next one, as a balancer's health
    check would. ``stop`` ends the clicking before ``until``."""
    rng = random.Random(seed)
    stop = stop or threading.Event()
    ports = port if isinstance(port, list) else [port]
    port = ports[seed % len(ports)]
    seq = 0
    headers = {"Cookie": f"sessionid={session}; csrftoken={CSRF}", "X-CSRFToken": CSRF,
               "Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json",
               "Referer": f"http://127.0.0.1:{port}/"}
    conn = None
    while time.monotonic() < until and not stop.is_set():
        assignment = rng.choice(assignments)
        item_id, allowed = rng.choice(items)
        value = rng.choice(allowed)
        seq += 1
        body = f"item={item_id}&value={value}&seq={seq}"
        delay = 0.1
        while True:
            status = None
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                conn.request("POST", f"/rate/{assignment}/label/", body=body, headers=headers)
                response = conn.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException):
                conn = None
                port = ports[(ports.index(port) + 1) % len(ports)]
            tally.count(status)
            if status == 200:
                with tally.lock:
                    tally.acked[(assignment, item_id)] = (seq, value)
                    tally.ack_times.append(time.monotonic())
                break
            if status is not None and 400 <= status < 500:
                break  # refused for good: the page drops it too
            if time.monotonic() > until + 30 or (stop.is_set() and give_up(stop)):
                return  # never acknowledged; counted as not delivered by the caller
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
        time.sleep(rng.uniform(0.02, 0.08))  # think time


def give_up(stop: threading.Event) -> bool:
    """A click still unacknowledged 30 s after the raters were stopped is given up."""
    stopped = getattr(stop, "at", None)
    if stopped is None:
        stop.at = stopped = time.monotonic()
    return time.monotonic() > stopped + 30


def stored_labels(database_url: str) -> dict[tuple[int, int], tuple[int, int]]:
    import psycopg

    with psycopg.connect(database_url.replace("postgres://", "postgresql://"), autocommit=True) as conn:
        rows = conn.execute("SELECT assignment_id, item_id, client_seq, value FROM annotation_label").fetchall()
    return {(a, i): (seq, value) for a, i, seq, value in rows}


# ---------------------------------------------------------------------------------------------------------------
# Faults
# ---------------------------------------------------------------------------------------------------------------
def database_restart(args) -> dict:
    """N raters save labels while PostgreSQL stops for ``args.down`` seconds and starts again."""
    with PostgresCluster() as cluster:
        var_dir = cluster.root / "var"
        var_dir.mkdir()
        database_url = cluster.create_database("minicex_faults")
        data = prepare_database(database_url, var_dir, args.raters, max(20, args.raters * 2))
        server = Gunicorn(database_url, var_dir, workers=args.workers)
        try:
            server.wait_ready()
            tally = Tally()
            started = time.monotonic()
            until = started + args.seconds
            threads = [threading.Thread(target=rater_loop, daemon=True,
                                        args=(server.port, r["session"], r["assignments"], data["items"], until,
                                              tally, n))
                       for n, r in enumerate(data["raters"]) if r["assignments"]]
            for thread in threads:
                thread.start()
            time.sleep(args.before)
            stop_at = time.monotonic()
            cluster.stop("fast")
            time.sleep(args.down)
            cluster.start()
            back_at = time.monotonic()
            for thread in threads:
                thread.join(timeout=args.seconds + 60)
            stuck = sum(thread.is_alive() for thread in threads)
        finally:
            server.stop()
        stored = stored_labels(database_url)
        lost = sum(1 for key, (seq, value) in tally.acked.items()
                   if key not in stored or stored[key][0] < seq or (stored[key][0] == seq and stored[key][1] != value))
        after = [t for t in tally.ack_times if t >= back_at]
        five_xx = sum(n for status, n in tally.statuses.items() if status >= 500 and status != 503)
        return {
            "fault": f"database restart ({args.down:g} s down)", "raters": len(threads), "requests": tally.requests,
            "acknowledged": len(tally.ack_times), "5xx": five_xx, "503": tally.statuses.get(503, 0),
            "other_4xx": sum(n for s, n in tally.statuses.items() if 400 <= s < 500),
            "no_answer": tally.errors, "tracebacks": server.tracebacks(), "lost": lost, "stuck": stuck,
            "outage_s": round(back_at - stop_at, 2),
            "recovery_s": round(min(after) - back_at, 2) if after else None,
        }


def fresh_database(name: str) -> str:
    """Drop and create a database on the local PostgreSQL; returns its URL. ``FAULTS_DATABASE_SUFFIX`` is appended to
    the name, so that people sharing a PostgreSQL can run the faults at once."""
    import psycopg

    name += os.environ.get("FAULTS_DATABASE_SUFFIX", "")

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"postgres://postgres@127.0.0.1:5432/{name}"


def engine_world(name: str, redis_url: str, queue: str) -> tuple[dict[str, str], Path]:
    """A fresh database ``name`` migrated, this process set up on it as Django (its environment returned for the
    workers), a var folder of its own, and an active project."""
    sys.path.insert(0, str(BASE_DIR))
    database_url = fresh_database(name)
    var_dir = Path(tempfile.mkdtemp(prefix="minicex-faults-"))
    env = {k: v for k, v in os.environ.items() if k not in ("CACHE_URL", "DEBUG")}
    env.update(DATABASE_URL=database_url, CELERY_BROKER_URL=redis_url, LIMITER_URL=redis_url,
               SECRET_KEY="faults-bench-insecure-key", DEBUG="0", CACHE_URL="locmem://", MINICEX_VAR_DIR=str(var_dir),
               DJANGO_SETTINGS_MODULE="config.settings", LLM_KEY_FAULTS="sk-x", CELERY_TASK_DEFAULT_QUEUE=queue,
               CELERY_LLM_QUEUE=f"{queue}-llm", LOG_LEVEL="WARNING")
    os.environ.update(env)
    subprocess.run([PYTHON, "manage.py", "migrate", "--noinput"], cwd=BASE_DIR, env=env, check=True,
                   capture_output=True, timeout=600)
    import django

    django.setup()
    from projects.roles import sync_roles
    from projects.scoping import activate
    from projects.services import create_project

    sync_roles()
    activate(create_project("Faults"))  # the rest of the set-up works in the project
    return env, var_dir


CELERY_WORKER = [PYTHON, "-m", "celery", "-A", "config", "worker", "--loglevel", "WARNING", "--without-mingle",
                 "--without-gossip"]


def start_worker(env: dict[str, str], log, *args: str) -> subprocess.Popen:
    """A Celery worker in a session of its own (so that it can be killed with its pool processes)."""
    return subprocess.Popen([*CELERY_WORKER, *args], cwd=BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def stop_workers(workers: list[subprocess.Popen]) -> None:
    for worker in workers:
        if worker.poll() is None:
            worker.terminate()
    for worker in workers:
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(worker.pid, 9)
            worker.wait()


def broker_restart(args) -> dict:
    """A judge run goes on while its Redis broker (without persistence) restarts; meanwhile a second run is started
    and a report is asked for, and both messages die with the broker. Measured: how long after the broker is back
    each resumes (the reconciler in the workers re-queues them), and units lost or requests sent twice."""
    sys.path.insert(0, str(BASE_DIR))
    from tests.fake_openai import FakeOpenAIProcess, fetch_requests
    from tests.services import RedisServer

    with RedisServer() as redis, FakeOpenAIProcess(latency=0.2, extra_args=("--mini-cex",)) as fake:
        env, var_dir = engine_world("minicex_faults_broker", redis.url, "faults")
        from django.contrib.auth import get_user_model

        from annotation.models import Corpus, Dialogue, ScaleVersion
        from core.jobs.models import Job
        from projects.roles import assign_role
        from scoring.judges import runs as judging
        from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun
        from tests.factories import campaign_with
        from tests.test_reports import rate_everything

        physicians = []
        for n in range(2):
            user = get_user_model().objects.create_user(f"faults{n}")
            assign_role(user, "physician")
            physicians.append(user)
        campaign = campaign_with(physicians, n=6, overlap=2, name="faults report")
        rate_everything(campaign, random.Random(3))
        corpus = Corpus.objects.create(name="faults judge")
        Dialogue.objects.bulk_create([Dialogue(corpus=corpus, external_id=f"f{i}", self_report=f"Pain ({i}).",
                                               turns=[{"role": "doctor", "text": f"Hello {i}"}]) for i in range(40)])
        config = JudgeConfig.objects.create(
            name="faults", base_url=fake.base_url, api_key_env="LLM_KEY_FAULTS", model="fake-judge", concurrency=4,
            timeout_seconds=5, prompt_set=judging.default_prompt_set(ScaleVersion.objects.get(number=1)))
        log = open(var_dir / "workers.log", "wb")  # noqa: SIM115 - closed below
        workers = [start_worker(env, log, "-Q", "faults", "-n", "default@%h"),
                   start_worker(env, log, "-Q", "faults-llm", "--pool", "threads", "--concurrency", "16",
                                "-n", "llm@%h")]
        try:
            time.sleep(8)  # the workers start
            first = judging.create_run(config, corpus, item_codes=["1.1", "2.1", "4"])
            judging.start(first)
            deadline = time.monotonic() + 120
            while JudgeResult.objects.filter(run=first, status="done").count() < 30 and time.monotonic() < deadline:
                time.sleep(0.1)
            redis.stop()
            stop_at = time.monotonic()
            second = judging.create_run(config, corpus, item_codes=["1.2"])
            JudgeRun.objects.filter(pk=second.pk).update(status="running")  # its wake-up message never arrives
            job = Job.objects.create(kind=Job.Kind.CAMPAIGN_REPORT, params={
                "campaign": campaign.pk, "fingerprint": "faults", "names": False, "ci_method": "percentile",
                "correlation": "pearson"})
            time.sleep(args.broker_down)
            redis.start()
            back_at = time.monotonic()
            resumed: dict[str, float] = {}
            while len(resumed) < 3 and time.monotonic() - back_at < 120:
                if "first" not in resumed and JudgeRun.objects.get(pk=first.pk).status == "succeeded":
                    resumed["first"] = time.monotonic() - back_at
                if "second" not in resumed and JudgeResult.objects.filter(run=second, status="done").exists():
                    resumed["second"] = time.monotonic() - back_at
                if "report" not in resumed and Job.objects.get(pk=job.pk).status != "queued":
                    resumed["report"] = time.monotonic() - back_at
                time.sleep(0.1)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not (JudgeRun.objects.get(pk=second.pk).status == "succeeded"
                                                        and Job.objects.get(pk=job.pk).is_finished):
                time.sleep(0.2)
        finally:
            stop_workers(workers)
            log.close()
        hashes: dict[str, int] = {}
        for record in fetch_requests(fake.base_url):
            if record["path"].endswith("/chat/completions") and record["status"] == 200:
                hashes[record["body_hash"]] = hashes.get(record["body_hash"], 0) + 1
        units = JudgeResult.objects.filter(run__in=[first, second]).count()
        done = JudgeResult.objects.filter(run__in=[first, second], status="done").count()
        job.refresh_from_db()
        return {
            "fault": f"broker restart ({args.broker_down:g} s down)", "requests": sum(hashes.values()),
            "lost": units - done, "duplicated": sum(n - 1 for n in hashes.values()),
            "outage_s": round(back_at - stop_at, 2),
            "recovery_s": round(max(resumed.values()), 2) if len(resumed) == 3 else None,
            "resumed": {k: round(v, 1) for k, v in resumed.items()}, "report_status": job.status,
        }


def worker_kill(args) -> dict:
    """SIGKILL of the LLM worker (its main and pool processes, as an out-of-memory kill or a lost machine) during a
    judge run; a new worker is started ``--restart-after`` seconds later. Measured: the time from the kill to the
    first request of the units the dead worker held (target 15 s: its heartbeat stopped, so its claims, slots and
    reservations are free without waiting out their lease), the run's length, and the requests against the run's
    bound (units x attempts), lost units and requests sent twice."""
    import signal

    sys.path.insert(0, str(BASE_DIR))
    from tests.fake_openai import FakeOpenAIProcess, body_hash, fetch_requests
    from tests.services import RedisServer

    with RedisServer() as redis, FakeOpenAIProcess(latency=args.kill_latency, extra_args=("--mini-cex",)) as fake:
        env, var_dir = engine_world("minicex_faults_kill", redis.url, "faultskill")
        from annotation.models import Corpus, Dialogue, ScaleVersion
        from scoring.judges import runs as judging
        from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun
        from scoring.llm.models import LLMWorker

        items = ["1.1", "2.1", "4"]
        dialogues = max(1, args.kill_prompts // len(items))
        corpus = Corpus.objects.create(name="faults kill")
        Dialogue.objects.bulk_create([Dialogue(corpus=corpus, external_id=f"k{i}", self_report=f"Pain ({i}).",
                                               turns=[{"role": "doctor", "text": f"Hello {i}"}])
                                      for i in range(dialogues)])
        config = JudgeConfig.objects.create(
            name="faults kill", base_url=fake.base_url, api_key_env="LLM_KEY_FAULTS", model="fake-judge",
            concurrency=args.kill_concurrency,
            prompt_set=judging.default_prompt_set(ScaleVersion.objects.get(number=1)))
        log = open(var_dir / "workers.log", "wb")  # noqa: SIM115 - closed below
        llm = ["-Q", "faultskill-llm", "--pool", "prefork", "--concurrency", "2"]
        workers = [start_worker(env, log, "-Q", "faultskill", "-n", "default@%h"),
                   start_worker(env, log, *llm, "-n", "llm1@%h")]
        try:
            time.sleep(8)  # the workers start
            run = judging.create_run(config, corpus, item_codes=items)
            units = JudgeResult.objects.filter(run=run).count()
            started = time.time()
            judging.start(run)
            deadline = time.monotonic() + 120
            while (JudgeResult.objects.filter(run=run, status="done").count() < units // 3
                   and time.monotonic() < deadline):
                time.sleep(0.05)
            os.killpg(workers[1].pid, signal.SIGKILL)
            killed = time.time()
            workers[1].wait()
            held = list(JudgeResult.objects.filter(run=run, status="pending").exclude(claimed_by="")
                        .values_list("pk", flat=True))
            time.sleep(args.restart_after)
            old_engines = set(LLMWorker.objects.values_list("owner", flat=True))
            workers.append(start_worker(env, log, *llm, "-n", "llm2@%h"))
            restarted = time.time()
            engine_up = None
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline and JudgeRun.objects.get(pk=run.pk).status == "running":
                if engine_up is None and LLMWorker.objects.exclude(owner__in=old_engines).exists():
                    engine_up = time.time()  # the new worker's first engine beats
                time.sleep(0.05)
            ended = time.time()
        finally:
            stop_workers(workers)
            log.close()
        run.refresh_from_db()
        records = [r for r in fetch_requests(fake.base_url) if r["path"].endswith("/chat/completions")]
        hashes: dict[str, int] = {}
        for record in records:
            hashes[record["body_hash"]] = hashes.get(record["body_hash"], 0) + 1
        resumed = {body_hash(request) for request in JudgeResult.objects.filter(pk__in=held, call__isnull=False)
                   .values_list("call__request", flat=True)}
        # Requests of the dead worker's units received after the kill but before the new worker was started are the
        # dead worker's own (in flight at the kill, logged late by a loaded endpoint): not a resumption. No other
        # LLM worker runs here, so the resumed requests are those received after the new worker's start.
        after = [r["received"] for r in records if r["received"] > restarted and r["body_hash"] in resumed]
        done = JudgeResult.objects.filter(run=run, status="done").count()
        return {
            "fault": f"LLM worker killed ({units} prompts, {args.kill_concurrency} in flight, "
                     f"{args.kill_latency * 1000:g} ms)",
            "requests": len(records), "bound": run.request_limit, "lost": units - done,
            "duplicated": sum(n - 1 for n in hashes.values()), "most_sends": max(hashes.values(), default=0),
            "held": len(held),
            "recovery_s": round(min(after) - killed, 2) if after else None,
            "restart_s": round(restarted - killed, 2), "run_s": round(ended - started, 2),
            "new_engine_s": round(engine_up - killed, 2) if engine_up else None,
            "status": run.status,
        }


def rolling_deploy(args) -> dict:
    """Two web servers and two worker hosts (separate processes and var folders stand in for machines) on one
    PostgreSQL and Redis. While raters save (failing over between the web servers, as behind a load balancer) and a
    judge run is in flight: each web server is restarted in turn (SIGTERM: gunicorn finishes its requests), then
    each host's workers (SIGTERM: a warm shutdown, the engines finish or give back their requests), then a
    migration adds a column to the labels' table (with a lock timeout, retried). Measured: saves acknowledged and
    lost, 5xx and connection errors seen by raters, and the judge run: every answer once."""
    import signal

    sys.path.insert(0, str(BASE_DIR))
    from tests.fake_openai import FakeOpenAIProcess, fetch_requests
    from tests.services import RedisServer

    with RedisServer() as redis, FakeOpenAIProcess(latency=0.5, extra_args=("--mini-cex",)) as fake:
        database_url = fresh_database("minicex_faults_deploy")
        root = Path(tempfile.mkdtemp(prefix="minicex-deploy-"))
        hosts = {name: root / name for name in ("web-a", "web-b", "worker-a", "worker-b")}
        for folder in hosts.values():
            folder.mkdir()
        data = prepare_database(database_url, hosts["web-a"], args.deploy_raters, max(20, args.deploy_raters * 2))
        env = {**app_env(database_url, hosts["worker-a"]), "CELERY_BROKER_URL": redis.url, "LIMITER_URL": redis.url,
               "LLM_KEY_FAULTS": "sk-x", "CELERY_TASK_DEFAULT_QUEUE": "deploy", "CELERY_LLM_QUEUE": "deploy-llm",
               "LOG_LEVEL": "WARNING"}
        os.environ.update(env)
        import django

        django.setup()
        from annotation.models import Corpus, Dialogue, ScaleVersion
        from projects.models import Project
        from projects.scoping import activate
        from scoring.judges import runs as judging
        from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun

        activate(Project.objects.get(name="Faults"))
        corpus = Corpus.objects.create(name="deploy judge")
        Dialogue.objects.bulk_create([Dialogue(corpus=corpus, external_id=f"j{i}", self_report=f"Pain ({i}).",
                                               turns=[{"role": "doctor", "text": f"Hello {i}"}])
                                      for i in range(args.deploy_prompts // 3)])
        config = JudgeConfig.objects.create(
            name="deploy", base_url=fake.base_url, api_key_env="LLM_KEY_FAULTS", model="fake-judge", concurrency=8,
            timeout_seconds=10, prompt_set=judging.default_prompt_set(ScaleVersion.objects.get(number=1)))
        log = open(root / "workers.log", "wb")  # noqa: SIM115 - closed below

        def worker_host(name: str) -> list[subprocess.Popen]:
            host_env = {**env, "MINICEX_VAR_DIR": str(hosts[name])}
            return [start_worker(host_env, log, "-Q", "deploy", "-n", f"default-{name}@%h"),
                    start_worker(host_env, log, "-Q", "deploy-llm", "--pool", "prefork", "--concurrency", "2",
                                 "-n", f"llm-{name}@%h")]

        webs = {name: Gunicorn(database_url, hosts[name], workers=2) for name in ("web-a", "web-b")}
        workers = {name: worker_host(name) for name in ("worker-a", "worker-b")}
        steps: list[str] = []
        tracebacks = 0
        try:
            for web in webs.values():
                web.wait_ready()
            time.sleep(6)  # the workers start
            run = judging.create_run(config, corpus, item_codes=["1.1", "2.1", "4"])
            units = JudgeResult.objects.filter(run=run).count()
            judging.start(run)
            tally = Tally()
            until = time.monotonic() + 3600  # stopped below, once every step is done
            ports = [web.port for web in webs.values()]
            stop = threading.Event()
            threads = [threading.Thread(target=rater_loop, daemon=True,
                                        args=(list(ports), r["session"], r["assignments"], data["items"], until,
                                              tally, n, stop))
                       for n, r in enumerate(data["raters"]) if r["assignments"]]
            for thread in threads:
                thread.start()
            began = time.monotonic()
            time.sleep(3)
            for name in list(webs):  # one web server at a time: the other serves meanwhile
                webs[name].stop()
                tracebacks += webs[name].tracebacks()
                webs[name] = Gunicorn(database_url, hosts[name], workers=2, port=webs[name].port)  # its address
                webs[name].wait_ready()
                steps.append(f"{name} restarted, {time.monotonic() - began:.1f} s")
                time.sleep(2)
            for name in list(workers):  # one worker host at a time: a warm shutdown, then the new version
                for worker in workers[name]:
                    worker.send_signal(signal.SIGTERM)
                for worker in workers[name]:
                    worker.wait(timeout=60)
                workers[name] = worker_host(name)
                steps.append(f"{name} restarted, {time.monotonic() - began:.1f} s")
                time.sleep(5)
            migrated = add_column(database_url)
            steps.append(f"column added ({migrated} attempt(s)), {time.monotonic() - began:.1f} s")
            time.sleep(2)
            stop.set()  # the raters stop (their last clicks are acknowledged first); the run finishes
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline and JudgeRun.objects.get(pk=run.pk).status == "running":
                time.sleep(0.2)
        finally:
            if "stop" in locals():
                stop.set()
                for thread in threads:
                    thread.join(timeout=40)
            for web in webs.values():
                web.stop()
            stop_workers([w for pair in workers.values() for w in pair])
            log.close()
        run.refresh_from_db()
        stored = stored_labels(database_url)
        lost = sum(1 for key, (seq, value) in tally.acked.items()
                   if key not in stored or stored[key][0] < seq or (stored[key][0] == seq and stored[key][1] != value))
        hashes: dict[str, int] = {}
        for record in fetch_requests(fake.base_url):
            if record["path"].endswith("/chat/completions"):
                hashes[record["body_hash"]] = hashes.get(record["body_hash"], 0) + 1
        done = JudgeResult.objects.filter(run=run, status="done").count()
        return {
            "fault": f"rolling deploy ({len(threads)} raters, 2 web, 2 worker hosts, a column added)",
            "requests": tally.requests, "acknowledged": len(tally.ack_times),
            "5xx": sum(n for status, n in tally.statuses.items() if status >= 500),
            "503": tally.statuses.get(503, 0), "no_answer": tally.errors,  # connection refused: tried again
            "tracebacks": tracebacks + sum(web.tracebacks() for web in webs.values()), "lost": lost + units - done,
            "duplicated": sum(n - 1 for n in hashes.values()), "judge_requests": sum(hashes.values()),
            "judge_units": units, "status": run.status, "steps": steps,
        }


def add_column(database_url: str, attempts: int = 20) -> int:
    """What a migration that adds a nullable column does, as a deploy runs it under load: ``ALTER TABLE`` with a
    lock timeout (it waits behind running transactions and every new one waits behind it), retried."""
    import psycopg

    with psycopg.connect(database_url.replace("postgres://", "postgresql://"), autocommit=True) as conn:
        for attempt in range(1, attempts + 1):
            try:
                with conn.transaction():
                    conn.execute("SET LOCAL lock_timeout = '2s'")
                    conn.execute("ALTER TABLE annotation_label ADD COLUMN IF NOT EXISTS deploy_note integer NULL")
                return attempt
            except psycopg.errors.LockNotAvailable:
                time.sleep(0.5)
    raise RuntimeError("the column could not be added")


FAULTS = {"database_restart": database_restart, "broker_restart": broker_restart,
          "worker_kill": worker_kill, "rolling_deploy": rolling_deploy}
COLUMNS = [("fault", "fault"), ("requests", "requests"), ("acknowledged", "acked saves"), ("5xx", "5xx (not 503)"),
           ("503", "503"), ("tracebacks", "tracebacks in log"), ("lost", "lost"), ("duplicated", "sent twice"),
           ("outage_s", "outage s"), ("recovery_s", "recovery s")]


def healthy(row: dict) -> bool:
    """The targets: no 5xx but 503, no traceback, nothing acknowledged lost, nothing sent twice, service back by
    itself (a broker restart: every job resumed within 30 s of the broker coming back; a killed LLM worker: its
    units asked again within 15 s of the kill, none more than twice, the run within its request bound)."""
    if row["fault"].startswith("rolling deploy"):
        return (row.get("5xx") == 0 and row.get("lost") == 0 and row.get("duplicated") == 0
                and row.get("status") == "succeeded" and row.get("tracebacks") == 0)
    if row["fault"].startswith("LLM worker killed"):  # requests in flight at the kill may be sent once more
        return (row.get("lost") == 0 and row.get("status") == "succeeded" and row.get("most_sends", 9) <= 2
                and row["requests"] <= row["bound"] and row.get("recovery_s") is not None
                and row["recovery_s"] <= 15)
    if row["fault"].startswith("broker"):
        return (row.get("lost") == 0 and row.get("duplicated") == 0 and row.get("recovery_s") is not None
                and row["recovery_s"] <= 30 and row.get("report_status") == "succeeded")
    return (row.get("5xx") == 0 and row.get("tracebacks", 0) == 0 and row.get("lost") == 0
            and row.get("stuck", 0) == 0 and row.get("recovery_s") is not None)


def print_table(rows: list[dict]) -> None:
    cells = [[str(row.get(key)) if row.get(key) is not None else "—" for key, _ in COLUMNS] for row in rows]
    widths = [max(len(title), *(len(c[n]) for c in cells)) for n, (_, title) in enumerate(COLUMNS)]
    print("  ".join(title.ljust(w) for (_, title), w in zip(COLUMNS, widths, strict=True)))
    for row in cells:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--faults", default=",".join(FAULTS), help=f"comma-separated: {', '.join(FAULTS)}")
    parser.add_argument("--raters", type=int, default=10, help="simulated physicians saving labels (10)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (2)")
    parser.add_argument("--seconds", type=float, default=20, help="length of the saving run (20)")
    parser.add_argument("--before", type=float, default=5, help="seconds of saving before the fault (5)")
    parser.add_argument("--down", type=float, default=3.5, help="seconds the database stays down (3.5)")
    parser.add_argument("--broker-down", type=float, default=2.0, help="seconds the broker stays down (2)")
    parser.add_argument("--kill-prompts", type=int, default=480, help="worker kill: the run's prompts (480)")
    parser.add_argument("--kill-concurrency", type=int, default=32, help="worker kill: requests in flight (32)")
    parser.add_argument("--kill-latency", type=float, default=0.3, help="worker kill: the endpoint's latency (0.3)")
    parser.add_argument("--deploy-raters", type=int, default=50, help="rolling deploy: raters saving (50)")
    parser.add_argument("--deploy-prompts", type=int, default=1200,
                        help="rolling deploy: the judge run's prompts (1,200 at concurrency 8 and 0.5 s)")
    parser.add_argument("--restart-after", type=float, default=3.0,
                        help="worker kill: seconds until a new LLM worker starts (3)")
    args = parser.parse_args(argv)
    os.chdir(BASE_DIR)
    rows = []
    for name in [f.strip() for f in args.faults.split(",") if f.strip()]:
        if name not in FAULTS:
            parser.error(f"unknown fault {name!r}; known: {', '.join(FAULTS)}")
        rows.append(FAULTS[name](args))
    print_table(rows)
    for row in rows:
        print(json.dumps(row))
    return 0 if all(healthy(row) for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
