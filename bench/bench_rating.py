"""Benchmark: 50 physicians rating at once against gunicorn on PostgreSQL.

Targets, on the 2-core machine with 50 concurrent simulated raters clicking through items:
  * saving one label: p95 <= 100 ms and >= 200 saves/s;
  * opening the rating page of a 40-turn dialogue: p95 <= 150 ms server time.

What it does:
  1. (Re)creates a dedicated PostgreSQL database (BENCH_DATABASE_URL, default
     postgres://postgres@127.0.0.1:5432/minicex_bench), runs ``manage.py migrate`` on it and builds the data with
     the project's services: 50 physicians (one known password), a corpus of 200 dialogues x 40 turns
     (~100-character sentences) imported through annotation.importers.import_dialogues, and a formal campaign on
     the LLM-specific Mini-CEX v1 with overlap 3 (create_campaign, add_rater, assign). Names carry a timestamp,
     so a rerun works even when the database cannot be dropped.
  2. Starts ``gunicorn config.wsgi`` (BENCH_WORKERS sync workers, default 4) in production mode on a free port,
     with an access log of the server time of every request (gunicorn's %(D)s, microseconds).
  3. A single-process asyncio load generator (hand-written HTTP/1.1 client, only 127.0.0.1) runs 50 raters.
     Each logs in through /accounts/login/, then walks its queue (starting at a random item of its first
     dialogue, as in a study under way): GET /rate/<id>/, then one POST
     /rate/<id>/label/ per item (item=<id>, value=0|1 or 1-3 for item 4, seq=<increasing>, X-CSRFToken);
     BENCH_REVISE (default 10%) of the clicks go back and change an earlier answer of the dialogue.
     Phases: warm-up (not counted); "paced": raters click on a schedule so that together they offer
     BENCH_RATE saves/s (default 220, i.e. each rater clicks every ~230 ms); "saturation": no think time, which
     gives the capacity (with 50 closed-loop clients, latency = 50 / throughput by Little's law, so the
     saturation run's latency is queueing, not the target).
  4. Unloaded page time: one client, BENCH_PAGE_GETS (default 200) sequential GETs of one 40-turn rating page.

Latency is reported twice: as the client sees it (includes waiting in the listen queue when all workers are
busy) and as server time (gunicorn's access log). Per phase, a CPU line (Linux /proc) splits the CPU used per
request between gunicorn, PostgreSQL (bench database), the load generator and the kernel, and warns when other
processes used the machine at the same time (the figures are then pessimistic).

Environment: BENCH_DATABASE_URL, BENCH_WORKERS (4), BENCH_SECONDS (30 per phase), BENCH_SAVES (optional cap per
phase), BENCH_RATE (220), BENCH_RATERS (50), BENCH_DIALOGUES (200), BENCH_TURNS (40), BENCH_REVISE (0.1),
BENCH_WARMUP (3 s), BENCH_PAGE_GETS (200), BENCH_SATURATION (1; 0 skips that phase), BENCH_SYNC_START (0; 1 starts
every phase with all raters opening a fresh dialogue at once, the worst case), BENCH_GUNICORN_ARGS (extra
gunicorn options for experiments). Command-line options override them.

Exit status 0 when the benchmark ran (whether or not the targets are met), 1 when it could not run.

Run:  cd /work/main && .venv/bin/python bench/bench_rating.py
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import math
import os
import random
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode, urlsplit, urlunsplit

BASE_DIR = Path(__file__).resolve().parent.parent
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/minicex_bench"
HOST = "127.0.0.1"
PASSWORD = "bench-rater-password-7"

TARGET_SAVE_P95_MS = 100.0
TARGET_SAVES_PER_S = 200.0
TARGET_PAGE_P95_MS = 150.0
MAX_ERRORS = 200


def env_number(name: str, default: float, kind=int):
    raw = os.environ.get(name, "").strip()
    return kind(raw) if raw else default


# --------------------------------------------------------------------------------------------- database setup


def recreate_database(url: str) -> str:
    """Drop and create the bench database (or keep it when another session holds it); returns what happened."""
    import psycopg
    from psycopg import sql

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if not name:
        raise SystemExit(f"bench: {url} names no database")
    admin_url = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is not None
        if exists:
            try:
                conn.execute(sql.SQL("DROP DATABASE {}").format(sql.Identifier(name)))
            except psycopg.errors.ObjectInUse:
                return f"kept existing database {name} (in use by another session; names are unique per run)"
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return f"{'re' if exists else ''}created database {name}"


def server_env(database_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "DATABASE_URL": database_url,
        "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
        "DEBUG": "0",
        "ALLOWED_HOSTS": HOST,
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/3",
        "DJANGO_SETTINGS_MODULE": "config.settings",
    })
    return env


# ------------------------------------------------------------------------------------------------- bench data

DOCTOR_LINES = [
    "Could you tell me when the pain first started and whether it has changed in character since then?",
    "Have you noticed any shortness of breath, sweating or nausea when the chest discomfort comes on?",
    "Do you have any long-term conditions such as high blood pressure, diabetes or asthma that we should know?",
    "Which medicines are you taking at the moment, including anything you bought without a prescription?",
    "I would like to arrange a blood test and an electrocardiogram today so that we can rule out heart problems.",
    "Does anything make the symptoms better or worse, for example resting, eating, or lying flat at night?",
    "It sounds like this could be reflux, but I want to be careful and check a few more things with you first.",
    "How has this been affecting your sleep, your appetite and your ability to work over the last few weeks?",
    "Is there anyone in your family who has had heart disease, a stroke or a blood clot at a young age?",
    "Please come back straight away or call an ambulance if the pain becomes severe or spreads to your arm.",
]
PATIENT_LINES = [
    "It started about three days ago, mostly in the evening, and it feels like a tight band across my chest.",
    "I sometimes feel a little short of breath when I climb the stairs, but I thought it was just tiredness.",
    "I have had high blood pressure for about five years and I take one tablet every morning with breakfast.",
    "I also take something for my stomach now and then when I get heartburn after a big or spicy meal.",
    "Resting seems to help a bit, but lying down flat right after dinner usually makes it noticeably worse.",
    "My father had a heart attack when he was in his sixties, so I am honestly quite worried about all this.",
    "I have not been sleeping well because of it, and I have been too anxious to concentrate at work lately.",
    "No, I have not had a fever, but I did have a bad cold with a cough about two weeks ago that went away.",
    "Thank you, doctor. Should I avoid exercise until the results come back, or is walking still all right?",
    "The discomfort lasts for maybe ten or fifteen minutes and then slowly fades away on its own each time.",
]
SELF_REPORTS = [
    "Chest tightness on and off for three days, worse after meals and when lying down; worried about my heart.",
    "Burning feeling behind the breastbone with some breathlessness on stairs; history of high blood pressure.",
    "Intermittent chest pressure in the evenings for several days, poor sleep, family history of heart disease.",
]


def dialogue_lines(count: int, turns: int, rng: random.Random) -> list[str]:
    """JSON Lines in the DESIGN.md section 5 format: self-report and alternating doctor/patient turns."""
    lines = []
    for n in range(count):
        record = {
            "id": f"rate-{n:04d}",
            "self_report": rng.choice(SELF_REPORTS),
            "turns": [{"role": "doctor" if t % 2 == 0 else "patient",
                       "text": rng.choice(DOCTOR_LINES if t % 2 == 0 else PATIENT_LINES)} for t in range(turns)],
            "model": rng.choice(["GPT-4", "Qwen-72B", "Baichuan2", "ChatGLM3"]),
            "language": "en",
            "split": "test",
            "meta": {"bench": "rating"},
        }
        lines.append(json.dumps(record))
    return lines


@dataclass
class BenchData:
    campaign: str
    queues: list[tuple[str, list[int]]]  # (username, assignment ids in queue order)
    items: list[tuple[int, str, tuple[int, ...]]]  # (item id, code, allowed values) in page order
    n_dialogues: int
    avg_turn_chars: float
    n_assignments: int


def build_data(n_raters: int, n_dialogues: int, n_turns: int, stamp: str) -> BenchData:
    """Users, corpus, campaign and assignments through the project's own services."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password

    from annotation.campaigns import add_rater, assign, create_campaign
    from annotation.importers import import_dialogues
    from annotation.labels import rating_items
    from annotation.models import Assignment, Corpus, Dialogue, ScaleVersion
    from projects.roles import PHYSICIAN, assign_role

    user_model = get_user_model()
    hashed = make_password(PASSWORD)  # hash once (PBKDF2 is slow by design); every bench rater shares it
    users = user_model.objects.bulk_create([
        user_model(username=f"bench-dr{i:02d}-{stamp}", password=hashed, first_name="Bench", last_name=f"Rater {i}")
        for i in range(n_raters)
    ])
    for user in users:
        assign_role(user, PHYSICIAN)

    corpus = Corpus.objects.create(name=f"bench-rating-{stamp}", description="Benchmark data (bench_rating.py).")
    counts = import_dialogues(corpus, dialogue_lines(n_dialogues, n_turns, random.Random(stamp)), source="bench")
    if counts["created"] != n_dialogues:
        raise RuntimeError(f"import created {counts}")
    turns = Dialogue.objects.filter(corpus=corpus).values_list("turns", flat=True)
    texts = [len(t["text"]) for row in turns for t in row]

    version = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
    campaign = create_campaign(name=f"bench-rating-{stamp}", corpus=corpus, scale_version=version, overlap=3,
                               instructions="Benchmark campaign.")
    for user in users:
        add_rater(campaign, user)
    result = assign(campaign)
    if not result.complete:
        raise RuntimeError(f"assignment left {len(result.short)} dialogues short of raters")

    queues: dict[str, list[int]] = {u.username: [] for u in users}
    for username, pk in (Assignment.objects.filter(campaign=campaign).order_by("rater_id", "position", "id")
                         .values_list("rater__username", "pk")):
        queues[username].append(pk)
    allowed = rating_items(version.pk)
    order = version.rating_items().order_by("order").values_list("pk", flat=True)
    items = [(pk, allowed[pk][0], allowed[pk][1]) for pk in order]
    return BenchData(campaign=campaign.name, queues=list(queues.items()), items=items, n_dialogues=n_dialogues,
                     avg_turn_chars=sum(texts) / len(texts), n_assignments=result.created)


# ------------------------------------------------------------------------------------------------- gunicorn


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def start_gunicorn(env: dict[str, str], workers: int, port: int, access_log: str, error_log: str, extra: str):
    cmd = [sys.executable, "-m", "gunicorn", "config.wsgi", "--workers", str(workers), "--bind", f"{HOST}:{port}",
           "--access-logfile", access_log, "--access-logformat", "%(m)s %(U)s %(s)s %(D)s",
           "--error-logfile", error_log, "--capture-output", *shlex.split(extra)]
    # Own process group: a Ctrl-C in the terminal reaches only this script, which then stops gunicorn cleanly.
    return subprocess.Popen(cmd, cwd=BASE_DIR, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def stop_gunicorn(proc) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)  # graceful: the master stops its workers
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the group this script started: master and workers
        proc.wait(timeout=5)


async def wait_until_up(port: int, proc, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"gunicorn exited with status {proc.returncode}")
        try:
            status, _, _ = await HttpClient(port).request("GET", "/accounts/login/")
            if status == 200:
                return
        except OSError:
            pass
        await asyncio.sleep(0.2)
    raise RuntimeError(f"gunicorn did not answer on port {port} within {timeout:.0f} s")


# ---------------------------------------------------------------------------------------- minimal HTTP client


class HttpClient:
    """HTTP/1.1 over asyncio streams with a cookie jar; keeps the connection when the server allows it
    (gunicorn's sync workers close it after each response, so most requests open a new one)."""

    def __init__(self, port: int):
        self.port = port
        self.cookies: dict[str, str] = {}
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError):
                await self.writer.wait_closed()
        self.reader = self.writer = None

    async def request(self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None):
        reused = self.writer is not None
        try:
            return await self._request(method, path, body, headers or {})
        except (ConnectionError, asyncio.IncompleteReadError):
            await self.close()
            if not reused:
                raise
            return await self._request(method, path, body, headers or {})  # the kept connection had gone stale

    async def _request(self, method: str, path: str, body: bytes, headers: dict[str, str]):
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(HOST, self.port)
        head = [f"{method} {path} HTTP/1.1", f"Host: {HOST}:{self.port}", "Connection: keep-alive",
                "User-Agent: bench_rating/1"]
        if self.cookies:
            head.append("Cookie: " + "; ".join(f"{k}={v}" for k, v in self.cookies.items()))
        if body or method == "POST":
            head.append(f"Content-Length: {len(body)}")
        head.extend(f"{k}: {v}" for k, v in headers.items())
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        await self.writer.drain()

        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionResetError("connection closed before the response")
        version, status = status_line.decode("latin-1").split(" ", 2)[:2]
        response_headers: list[tuple[str, str]] = []
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            response_headers.append((name.strip().lower(), value.strip()))
        hdr = dict(response_headers)
        if hdr.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int((await self.reader.readline()).split(b";")[0], 16)
                if size == 0:
                    await self.reader.readline()
                    break
                chunks.append(await self.reader.readexactly(size))
                await self.reader.readline()
            payload = b"".join(chunks)
        elif "content-length" in hdr:
            payload = await self.reader.readexactly(int(hdr["content-length"]))
        else:
            payload = await self.reader.read()
            hdr["connection"] = "close"
        for name, value in response_headers:
            if name == "set-cookie":
                key, _, val = value.split(";", 1)[0].partition("=")
                self.cookies[key.strip()] = val.strip()
        if hdr.get("connection", "").lower() == "close" or version == "HTTP/1.0":
            await self.close()
        return int(status), hdr, payload


# ------------------------------------------------------------------------------------------------ the raters


@dataclass
class Phase:
    name: str
    rate: float  # offered saves/s for all raters together; 0 = no think time
    seconds: float
    max_saves: int | None
    record: bool = True
    n_raters: int = 0
    saves: list[float] = field(default_factory=list)  # client latency, ms
    pages: list[float] = field(default_factory=list)
    loop_lag: list[float] = field(default_factory=list)
    errors: int = 0
    elapsed: float = 0.0
    stop: bool = False


class Rater:
    def __init__(self, port: int, username: str, queue: list[int], items, seed: int, revise: float = 0.0,
                 sync_start: bool = False):
        self.port, self.username, self.queue, self.items, self.revise = port, username, queue, items, revise
        self.sync_start = sync_start
        self.client = HttpClient(port)
        self.rng = random.Random(seed)
        self.seq = 0
        # (assignment index, item index) continues across phases. Raters start at a random item of their first
        # dialogue (its page already open), as in a study under way: 50 physicians do not open their pages in the
        # same instant, and starting them in step would make every phase begin with a burst of 50 page loads.
        # --sync-start measures that worst case: every phase starts all raters on a fresh dialogue.
        self.position = 0
        self.item_index = self.rng.randrange(len(items)) if items and not sync_start else 0

    async def login(self, failures: list) -> None:
        status, _, body = await self.client.request("GET", "/accounts/login/")
        token = self.client.cookies.get("csrftoken")
        if status != 200 or not token:
            raise RuntimeError(f"{self.username}: login page answered {status} without a csrftoken cookie")
        form = urlencode({"username": self.username, "password": PASSWORD, "csrfmiddlewaretoken": token}).encode()
        headers = {"Content-Type": "application/x-www-form-urlencoded",
                   "Referer": f"http://{HOST}:{self.port}/accounts/login/"}
        status, _, body = await self.client.request("POST", "/accounts/login/", form, headers)
        if status != 302 or "sessionid" not in self.client.cookies:
            failures.append(("POST", "/accounts/login/", status, body[:300]))
            raise RuntimeError(f"{self.username}: login answered {status}")

    async def run(self, phase: Phase, failures: list) -> None:
        loop = asyncio.get_running_loop()
        interval = phase.n_raters / phase.rate if phase.rate > 0 else 0.0  # this rater's mean time between clicks
        next_at = loop.time() + self.rng.uniform(0, interval)
        if self.sync_start and self.item_index:
            self.item_index = 0
            self.position += 1
        while not phase.stop:
            assignment = self.queue[self.position % len(self.queue)]
            if self.item_index == 0:
                await self._page(phase, assignment, failures)
            while self.item_index < len(self.items) and not phase.stop:
                if interval:
                    delay = next_at - loop.time()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    # Schedule the next click; after a slow answer catch up by at most one click.
                    next_at = max(next_at, loop.time() - interval) + interval * self.rng.uniform(0.5, 1.5)
                    if phase.stop:
                        break
                if self.item_index and self.rng.random() < self.revise:
                    item = self.items[self.rng.randrange(self.item_index)]  # go back and change an answer
                else:
                    item = self.items[self.item_index]
                    self.item_index += 1
                await self._save(phase, assignment, item, failures)
            if self.item_index >= len(self.items):
                self.item_index = 0
                self.position += 1  # next dialogue in the queue (wraps: raters revise earlier answers)

    async def _page(self, phase: Phase, assignment: int, failures: list) -> None:
        path = f"/rate/{assignment}/"
        started = time.perf_counter()
        try:
            status, _, body = await self.client.request("GET", path)
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            status, body = 0, repr(exc).encode()
        elapsed = (time.perf_counter() - started) * 1000
        if status != 200 or b"data-rating" not in body:
            self._failed(phase, failures, ("GET", path, status, body[:300]))
        elif phase.record:
            phase.pages.append(elapsed)

    @staticmethod
    def _failed(phase: Phase, failures: list, failure: tuple) -> None:
        phase.errors += 1
        if len(failures) < 100:
            failures.append(failure)
        if phase.errors >= MAX_ERRORS:  # the server is down or broken: no point hammering it for the whole phase
            phase.stop = True

    async def _save(self, phase: Phase, assignment: int, item, failures: list) -> None:
        item_id, _code, allowed = item
        self.seq += 1
        form = urlencode({"item": item_id, "value": self.rng.choice(allowed), "seq": self.seq}).encode()
        path = f"/rate/{assignment}/label/"
        headers = {"Content-Type": "application/x-www-form-urlencoded",
                   "X-CSRFToken": self.client.cookies.get("csrftoken", ""),
                   "Referer": f"http://{HOST}:{self.port}/rate/{assignment}/"}
        started = time.perf_counter()
        try:
            status, _, body = await self.client.request("POST", path, form, headers)
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            status, body = 0, repr(exc).encode()
        elapsed = (time.perf_counter() - started) * 1000
        if not 200 <= status < 300:
            self._failed(phase, failures, ("POST", path, status, body[:300]))
            return
        if phase.record:
            phase.saves.append(elapsed)
            if phase.max_saves and len(phase.saves) >= phase.max_saves:
                phase.stop = True


async def run_phase(raters: list[Rater], phase: Phase, failures: list) -> Phase:
    phase.n_raters = len(raters)
    started = time.perf_counter()

    async def timer():
        await asyncio.sleep(phase.seconds)
        phase.stop = True

    async def lag_probe():
        """How late the load generator's event loop wakes up: its own delay, included in client latencies."""
        loop = asyncio.get_running_loop()
        while not phase.stop:
            due = loop.time() + 0.01
            await asyncio.sleep(0.01)
            phase.loop_lag.append((loop.time() - due) * 1000)

    clock, probe = asyncio.create_task(timer()), asyncio.create_task(lag_probe())
    await asyncio.gather(*(r.run(phase, failures) for r in raters))
    clock.cancel()
    probe.cancel()
    phase.elapsed = time.perf_counter() - started
    return phase


async def unloaded_pages(port: int, username: str, assignment: int, count: int, failures: list) -> Phase:
    phase = Phase("unloaded", 0, 0, None)
    rater = Rater(port, username, [assignment], [], 0)
    await rater.login(failures)
    for _ in range(5):  # warm this worker path
        await rater.client.request("GET", f"/rate/{assignment}/")
    started = time.perf_counter()
    for _ in range(count):
        await rater._page(phase, assignment, failures)
    phase.elapsed = time.perf_counter() - started
    await rater.client.close()
    return phase


# ------------------------------------------------------------------------------------------------ CPU account


def _proc_stat(pid: str) -> tuple[str, int, float] | None:
    """(command, parent pid, CPU seconds) of a process from /proc, or None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    comm = raw[raw.find("(") + 1:raw.rfind(")")]
    rest = raw[raw.rfind(")") + 2:].split()
    return comm, int(rest[1]), (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


def _is_bench_postgres(pid: str, database: str) -> bool:
    """PostgreSQL's own processes and the backends serving the bench database (not other sessions' databases)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return False
    is_backend = "(" in cmdline or "[local]" in cmdline
    return not is_backend or f" {database} " in cmdline


def cpu_snapshot(server_pid: int, database: str) -> dict:
    """CPU seconds used so far by the whole machine (busy time) and per process: gunicorn (master and workers),
    PostgreSQL (serving the bench database); the load generator is this process."""
    snap: dict = {"busy": 0.0, "irq": 0.0, "steal": 0.0, "client": sum(os.times()[:2]), "procs": {}}
    try:
        # user nice system idle iowait irq softirq steal
        ticks = [int(v) / os.sysconf("SC_CLK_TCK") for v in Path("/proc/stat").read_text().split()[1:9]]
        snap["busy"] = ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6]
        snap["irq"] = ticks[5] + ticks[6]
        snap["steal"] = ticks[7]
        for pid in filter(str.isdigit, os.listdir("/proc")):
            info = _proc_stat(pid)
            if info is None:
                continue
            comm, ppid, cpu = info
            if int(pid) == server_pid or ppid == server_pid:
                snap["procs"][pid] = ("app", cpu)
            elif comm.startswith("postgres") and _is_bench_postgres(pid, database):
                snap["procs"][pid] = ("db", cpu)
            elif int(pid) != os.getpid():
                snap["procs"][pid] = (f"other:{comm}", cpu)
    except (OSError, ValueError, IndexError):
        snap["busy"] = 0.0  # not Linux: the CPU line is left out
    return snap


def cpu_line(before: dict, after: dict, elapsed: float, requests: int) -> str:
    used = {k: after[k] - before[k] for k in ("busy", "irq", "steal", "client")}
    used.update(app=0.0, db=0.0)
    others: dict[str, float] = {}
    for pid, (kind, cpu) in after["procs"].items():  # processes that ended during the phase are left out
        delta = cpu - before["procs"].get(pid, (kind, 0.0))[1]
        if kind.startswith("other:"):
            others[kind[6:]] = others.get(kind[6:], 0.0) + delta
        else:
            used[kind] += delta
    if not used["busy"] or not requests:
        return "  CPU                      (not available)"
    other = max(0.0, used["busy"] - used["app"] - used["db"] - used["client"] - used["irq"])
    per = {k: v / requests * 1000 for k, v in used.items()}
    stolen = used["steal"] / elapsed
    line = (f"  CPU                      machine {used['busy'] / elapsed:.2f} of {os.cpu_count()} cores busy"
            + (f" (and {stolen:.2f} cores stolen by the hypervisor)" if stolen > 0.05 else "")
            + f"; per request: gunicorn {per['app']:.1f} ms, PostgreSQL {per['db']:.1f} ms, load generator "
            f"{per['client']:.1f} ms, kernel interrupts {per['irq']:.1f} ms, other {other / requests * 1000:.1f} ms")
    if other / elapsed > 0.25:
        top = sorted(others.items(), key=lambda kv: -kv[1])[:3]
        line += (f"\n  WARNING                  other processes used {other / elapsed:.2f} cores during this phase: "
                 "the machine was not dedicated to the benchmark, figures are pessimistic"
                 "\n                           busiest: " + ", ".join(f"{name} {cpu:.1f} s" for name, cpu in top))
    return line


# --------------------------------------------------------------------------------------------------- report


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def server_times(log_path: str, start: int, end: int) -> tuple[dict[str, list[float]], int]:
    """Server time (ms) per kind of request from gunicorn's access log between two byte offsets."""
    with open(log_path, "rb") as handle:
        handle.seek(start)
        chunk = handle.read(end - start).decode("utf-8", "replace")
    out: dict[str, list[float]] = {"save": [], "page": []}
    non2xx = 0
    for line in chunk.splitlines():
        parts = line.split()
        if len(parts) != 4:
            continue
        method, path, status, micros = parts
        if not status.startswith("2") and not path.startswith("/accounts/"):
            non2xx += 1
        if method == "POST" and path.startswith("/rate/") and path.endswith("/label/"):
            out["save"].append(int(micros) / 1000)
        elif method == "GET" and path.startswith("/rate/"):
            out["page"].append(int(micros) / 1000)
    return out, non2xx


def verdict(value: float, ok: bool) -> str:
    return "n/a (no samples)" if math.isnan(value) else ("PASS" if ok else "FAIL")


def target_line(label: str, value: float, unit: str, ok: bool, note: str = "") -> None:
    number = f"{value:8.1f} {unit:2s}" if isinstance(value, float) else f"{value:8d}   "
    print(f"  {label:52s} {number}  {verdict(value, ok):4s}  {note}".rstrip())


def fmt(values: list[float]) -> str:
    return (f"p50 {pct(values, 50):6.1f}  p95 {pct(values, 95):6.1f}  p99 {pct(values, 99):6.1f}  "
            f"max {max(values) if values else float('nan'):6.1f} ms  (n={len(values):,})")


def report_phase(phase: Phase, server: dict[str, list[float]], n_raters: int, cpu: str,
                 sync_start: bool = False) -> dict[str, float]:
    rate = len(phase.saves) / phase.elapsed if phase.elapsed else 0.0
    offered = f"offered {phase.rate:.0f} saves/s" if phase.rate else "no think time"
    start = "all raters open a fresh dialogue at the start" if sync_start else "raters at staggered items"
    print(f"\n-- {phase.name}: {n_raters} raters ({start}), {offered}, {phase.elapsed:.1f} s")
    print(f"  saves/s                  {rate:8.1f}")
    print(f"  save latency (client)    {fmt(phase.saves)}")
    print(f"  save server time         {fmt(server['save'])}")
    print(f"  page GET latency (client){fmt(phase.pages)}")
    print(f"  page GET server time     {fmt(server['page'])}")
    print(f"  load generator loop lag  p50 {pct(phase.loop_lag, 50):6.1f}  p95 {pct(phase.loop_lag, 95):6.1f}  "
          f"max {max(phase.loop_lag, default=float('nan')):6.1f} ms  (its own delay, part of client latency)")
    print(cpu)
    print(f"  errors                   {phase.errors}")
    return {"rate": rate, "save_p95": pct(phase.saves, 95), "page_server_p95": pct(server["page"], 95),
            "page_client_p95": pct(phase.pages, 95)}


# ------------------------------------------------------------------------------------------------------ main


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=env_number("BENCH_WORKERS", 4))
    parser.add_argument("--seconds", type=float, default=env_number("BENCH_SECONDS", 30.0, float))
    parser.add_argument("--saves", type=int, default=env_number("BENCH_SAVES", 0), help="cap per phase (0 = none)")
    parser.add_argument("--rate", type=float, default=env_number("BENCH_RATE", 220.0, float),
                        help="saves/s offered by all raters together in the paced phase")
    parser.add_argument("--raters", type=int, default=env_number("BENCH_RATERS", 50))
    parser.add_argument("--dialogues", type=int, default=env_number("BENCH_DIALOGUES", 200))
    parser.add_argument("--turns", type=int, default=env_number("BENCH_TURNS", 40))
    parser.add_argument("--revise", type=float, default=env_number("BENCH_REVISE", 0.1, float),
                        help="probability that a click goes back and changes an earlier answer")
    parser.add_argument("--gunicorn-args", default=os.environ.get("BENCH_GUNICORN_ARGS", ""),
                        help="extra gunicorn options for experiments, e.g. '--worker-class gthread --threads 4'")
    parser.add_argument("--warmup", type=float, default=env_number("BENCH_WARMUP", 3.0, float))
    parser.add_argument("--sync-start", action="store_true", default=bool(env_number("BENCH_SYNC_START", 0)),
                        help="worst case: every phase starts all raters on a fresh dialogue (50 page loads at once)")
    parser.add_argument("--page-gets", type=int, default=env_number("BENCH_PAGE_GETS", 200))
    parser.add_argument("--no-saturation", action="store_true", default=not env_number("BENCH_SATURATION", 1))
    return parser.parse_args()


async def load(args, data: BenchData, port: int, server_pid: int, database: str, access_log: str,
               failures: list) -> dict:
    raters = [Rater(port, username, queue, data.items, seed=i, revise=args.revise, sync_start=args.sync_start)
              for i, (username, queue) in enumerate(data.queues)]
    started = time.perf_counter()
    await asyncio.gather(*(r.login(failures) for r in raters))
    print(f"login: {len(raters)} raters logged in concurrently in {time.perf_counter() - started:.1f} s "
          "(PBKDF2 password checks; not counted)")

    if args.warmup > 0:
        await run_phase(raters, Phase("warm-up", args.rate, args.warmup, None, record=False), failures)
    results = {}
    phases = [Phase("paced (the target load)", args.rate, args.seconds, args.saves or None)]
    if not args.no_saturation:
        phases.append(Phase("saturation (capacity)", 0, args.seconds, args.saves or None))
    for phase in phases:
        await asyncio.sleep(0.5)
        offset = os.path.getsize(access_log)
        cpu_before = cpu_snapshot(server_pid, database)
        await run_phase(raters, phase, failures)
        cpu_after = cpu_snapshot(server_pid, database)
        cpu = cpu_line(cpu_before, cpu_after, phase.elapsed, len(phase.saves) + len(phase.pages))
        await asyncio.sleep(0.5)  # let the workers write the last access-log lines
        server, _ = server_times(access_log, offset, os.path.getsize(access_log))
        results[phase.name] = (phase, report_phase(phase, server, len(raters), cpu, args.sync_start))
    for rater in raters:
        await rater.client.close()

    await asyncio.sleep(0.5)
    offset = os.path.getsize(access_log)
    username, queue = data.queues[0]
    unloaded = await unloaded_pages(port, username, queue[0], args.page_gets, failures)
    await asyncio.sleep(0.5)
    server, _ = server_times(access_log, offset, os.path.getsize(access_log))
    server["page"] = server["page"][5:]  # drop the warm-up GETs
    print(f"\n-- unloaded: one client, {len(unloaded.pages)} sequential GETs of one {args.turns}-turn rating page")
    print(f"  page GET latency (client){fmt(unloaded.pages)}")
    print(f"  page GET server time     {fmt(server['page'])}")
    results["unloaded"] = (unloaded, {"page_server_p95": pct(server["page"], 95),
                                      "page_client_p95": pct(unloaded.pages, 95)})
    return results


def _terminate(signum, frame):
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)  # no "task exception never retrieved" noise
    raise KeyboardInterrupt  # runs the cleanup (gunicorn is stopped in main's finally)


def main() -> int:
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    args = parse_args()
    database_url = os.environ.get("BENCH_DATABASE_URL", "").strip() or DEFAULT_DATABASE_URL
    env = server_env(database_url)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    print(f"== bench_rating: gunicorn ({args.workers} workers{' ' + args.gunicorn_args if args.gunicorn_args else ''}"
          f") + PostgreSQL, {os.cpu_count()} CPUs, load average before start {os.getloadavg()[0]:.2f}")
    sys.path.insert(0, str(BASE_DIR))
    from bench.machine import calibration_line

    print(calibration_line())
    try:
        print(f"database: {recreate_database(database_url)}")
    except Exception as exc:  # any connection problem: the benchmark cannot run
        print(f"bench: cannot prepare the database {database_url}: {exc}", file=sys.stderr)
        return 1
    started = time.perf_counter()
    migrate = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=BASE_DIR,
                             env=env, check=False)
    if migrate.returncode:
        print(f"bench: manage.py migrate failed with status {migrate.returncode}", file=sys.stderr)
        return 1
    print(f"migrate: {time.perf_counter() - started:.1f} s")

    os.environ.update({k: env[k] for k in ("DATABASE_URL", "SECRET_KEY", "DEBUG", "ALLOWED_HOSTS",
                                           "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE")})
    import django

    django.setup()
    from django.db import connection

    from bench.machine import enter_project

    enter_project("Bench rating")  # raters, corpus and campaign are the benchmark project's
    started = time.perf_counter()
    data = build_data(args.raters, args.dialogues, args.turns, stamp)
    connection.close()
    n_binary = sum(1 for _, _, allowed in data.items if len(allowed) == 2)
    print(f"data: {len(data.queues)} physicians, {data.n_dialogues} dialogues x {args.turns} turns "
          f"(avg {data.avg_turn_chars:.0f} chars/turn), campaign {data.campaign} overlap 3 -> "
          f"{data.n_assignments} assignments; {len(data.items)} rating items ({n_binary} binary) "
          f"in {time.perf_counter() - started:.1f} s")

    port = free_port()
    logdir = tempfile.mkdtemp(prefix="bench-rating-")
    access_log, error_log = os.path.join(logdir, "access.log"), os.path.join(logdir, "error.log")
    proc = None
    failures: list = []
    try:
        proc = start_gunicorn(env, args.workers, port, access_log, error_log, args.gunicorn_args)
        asyncio.run(wait_until_up(port, proc))
        print(f"gunicorn: pid {proc.pid}, {HOST}:{port}, logs in {logdir}")
        database = urlsplit(database_url).path.lstrip("/")
        results = asyncio.run(load(args, data, port, proc.pid, database, access_log, failures))
    except KeyboardInterrupt:
        print("\nbench: interrupted", file=sys.stderr)
        return 1
    except Exception as exc:
        print(f"bench: the benchmark could not run: {exc!r}", file=sys.stderr)
        for failure in failures[:5]:
            print(f"  {failure}", file=sys.stderr)
        if os.path.exists(error_log):
            print(Path(error_log).read_text()[-3000:], file=sys.stderr)
        return 1
    finally:
        stop_gunicorn(proc)

    paced = next(v for k, v in results.items() if k.startswith("paced"))[1]
    saturation = next((v[1] for k, v in results.items() if k.startswith("saturation")), None)
    unloaded = results["unloaded"][1]
    errors = sum(phase.errors for phase, _ in results.values())
    print("\n== targets")
    target_line(f"save p95 <= {TARGET_SAVE_P95_MS:.0f} ms (paced load)", paced["save_p95"], "ms",
                paced["save_p95"] <= TARGET_SAVE_P95_MS)
    target_line(f">= {TARGET_SAVES_PER_S:.0f} saves/s (paced load, achieved)", paced["rate"], "/s",
                paced["rate"] >= TARGET_SAVES_PER_S)
    if saturation:
        target_line(f">= {TARGET_SAVES_PER_S:.0f} saves/s (capacity, no think time)", saturation["rate"], "/s",
                    saturation["rate"] >= TARGET_SAVES_PER_S)
    for label, figures in (("paced load", paced), ("unloaded", unloaded)):
        target_line(f"page p95 <= {TARGET_PAGE_P95_MS:.0f} ms server time ({label})", figures["page_server_p95"],
                    "ms", figures["page_server_p95"] <= TARGET_PAGE_P95_MS,
                    f"(client-side p95 {figures['page_client_p95']:.1f} ms)")
    target_line("errors (non-2xx or failed requests) == 0", errors, "", errors == 0)
    for method, path, status, body in failures[:5]:
        print(f"    {method} {path} -> {status}: {body.decode('utf-8', 'replace')!r}")
    if errors:
        print(f"    server tracebacks: {error_log}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
