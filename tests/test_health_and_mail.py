"""/healthz answers from a recent worker ping (and logs a 503 as one line, never an
error); printed e-mail never shows a Delphi panel link, and production mode will not start without an e-mail
backend chosen."""

import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.core import mail
from django.core.cache import cache

from config.mail import ConsoleBackend
from core.site import health
from delphi import services as delphi
from tests.test_delphi import make_study

BASE_DIR = Path(__file__).resolve().parent.parent


class FakePings:
    """Stands in for the broker round trip: counts pings and answers as told."""

    def __init__(self, ok: bool = True):
        self.ok, self.calls = ok, 0

    def __call__(self, timeout: float = 1.5) -> dict:
        self.calls += 1
        if self.ok:
            return {"ok": True, "count": 1, "workers": ["w1@host"], "checked_at": time.time()}
        return {"ok": False, "count": 0, "workers": [], "error": "no Celery worker answered a ping within 1.5 s",
                "checked_at": time.time()}


def age_the_ping(seconds: float) -> None:
    entry = cache.get(health._WORKERS_KEY)
    entry["checked_at"] -= seconds
    cache.set(health._WORKERS_KEY, entry)


def wait_for_refresh(timeout: float = 10) -> None:
    for thread in threading.enumerate():
        if thread.name == "health-ping":
            thread.join(timeout)


@pytest.fixture(autouse=True)
def no_refresh_left_running():
    """A background ping an earlier test started (a real one, against a real or absent broker) holds the refresh
    lock until it answers; these tests count pings, so they start only once it has, and without its answer: it was
    written after the cache was emptied for this test (CI once read a real "no worker answered" as the first ping)."""
    wait_for_refresh(60)
    cache.delete(health._WORKERS_KEY)
    yield
    wait_for_refresh(60)


def test_healthz_reuses_a_recent_ping_and_refreshes_an_older_one_in_the_background(client, admin_user,
                                                                                   monkeypatch):
    pings = FakePings()
    monkeypatch.setattr(health, "ping_workers", pings)
    client.force_login(admin_user)
    for _ in range(5):
        body = client.get("/healthz").json()
        assert body["status"] == "ok" and body["workers"]["workers"] == ["w1@host"]
    assert pings.calls == 1 and body["workers"]["checked_seconds_ago"] < health.WORKERS_FRESH[True]
    age_the_ping(health.WORKERS_FRESH[True] + 1)  # stale: answered at once, pinged again behind the answer
    body = client.get("/healthz").json()
    assert body["status"] == "ok" and body["workers"]["checked_seconds_ago"] >= health.WORKERS_FRESH[True]
    wait_for_refresh()
    assert pings.calls == 2 and client.get("/healthz").json()["workers"]["checked_seconds_ago"] < 5
    age_the_ping(health.WORKERS_STALE[True] + 1)  # too old to answer with: this request pings itself
    client.get("/healthz")
    assert pings.calls == 3


def test_a_worker_that_stops_answering_turns_healthz_503_within_the_freshness_window(client, monkeypatch, db):
    pings = FakePings()
    monkeypatch.setattr(health, "ping_workers", pings)
    assert client.get("/healthz").status_code == 200
    pings.ok = False
    age_the_ping(health.WORKERS_STALE[True] + 1)
    assert client.get("/healthz").status_code == 503
    pings.ok = True  # the workers came up: a degraded answer is reused only briefly
    age_the_ping(health.WORKERS_FRESH[False] + 0.5)
    client.get("/healthz")
    wait_for_refresh()
    assert client.get("/healthz").status_code == 200


def test_a_503_before_the_workers_are_up_is_one_warning_line_not_an_error(client, monkeypatch, caplog, db):
    monkeypatch.setattr(health, "ping_workers", FakePings(ok=False))
    monkeypatch.setattr(health, "_last_logged", [""])
    caplog.set_level(logging.INFO)
    for _ in range(3):
        response = client.get("/healthz")
        assert response.status_code == 503 and response.json() == {"status": "degraded"}
    records = [r for r in caplog.records if r.name in ("minicex.health", "django.request")]
    assert [r.levelno for r in records] == [logging.WARNING, logging.INFO, logging.INFO]
    assert all(r.name == "minicex.health" and r.exc_info is None for r in records)
    assert "workers: no Celery worker answered" in records[0].getMessage()
    # Up again: one info line; down again later: a warning again.
    monkeypatch.setattr(health, "ping_workers", FakePings(ok=True))
    cache.clear()
    caplog.clear()
    assert client.get("/healthz").status_code == 200 and client.get("/healthz").status_code == 200
    monkeypatch.setattr(health, "ping_workers", FakePings(ok=False))
    cache.clear()
    assert client.get("/healthz").status_code == 503
    records = [r for r in caplog.records if r.name == "minicex.health"]
    assert [r.levelno for r in records] == [logging.INFO, logging.WARNING], [r.getMessage() for r in records]
    assert records[0].getMessage().startswith("health check ok again")


class BlockedPings(FakePings):
    """A ping that does not answer until the test lets it (a broker with no worker waits its whole timeout)."""

    def __init__(self, ok: bool = True):
        super().__init__(ok)
        self.release, self.threads = threading.Event(), []

    def __call__(self, timeout: float = 1.5) -> dict:
        self.threads.append(threading.current_thread().name)
        assert self.release.wait(10), "the test never let the ping answer"
        return super().__call__(timeout)


def test_the_system_page_never_waits_for_a_ping(client, admin_user, monkeypatch):
    pings = BlockedPings()
    monkeypatch.setattr(health, "ping_workers", pings)
    client.force_login(admin_user)
    # The ping answers only when the test lets it: a page that waited for it would not come back.
    page = client.get("/system/").content.decode()  # no answer yet: "checking", the ping runs behind the page
    assert pinging() and pings.calls == 0
    assert "checking the workers" in page and 'data-testid="workers-checking"' in page
    poll = client.get("/system/workers/?after=0")
    assert poll.status_code == 200 and "HX-Refresh" not in poll  # still pinging: the note polls again
    pings.release.set()
    wait_for_refresh()
    poll = client.get("/system/workers/?after=0")
    assert poll.status_code == 204 and poll["HX-Refresh"] == "true"
    page = client.get("/system/").content.decode()
    assert "all services up" in page and "w1@host" in page and "pinged 0 s ago" in page
    assert 'data-testid="workers-checking"' not in page and pings.threads == ["health-ping"]
    # An old answer is shown with its age, however old, while a new ping runs behind the page.
    pings.release.clear()
    age_the_ping(health.WORKERS_STALE[True] + 60)
    page = client.get("/system/").content.decode()
    assert pinging() and pings.calls == 1
    assert "all services up" in page and "pinged 90 s ago; pinging again" in page
    checked_at = cache.get(health._WORKERS_KEY)["checked_at"]
    assert client.get(f"/system/workers/?after={checked_at}").status_code == 200
    pings.release.set()
    wait_for_refresh()
    assert client.get(f"/system/workers/?after={checked_at}").status_code == 204
    assert pings.threads == ["health-ping"] * 2 and pings.calls == 2


def pinging() -> bool:
    """A background ping is running (it waits for the test to let it answer)."""
    return any(t.name == "health-ping" and t.is_alive() for t in threading.enumerate())


def test_anonymous_health_checks_skip_the_staff_details(client, admin_user, monkeypatch):
    monkeypatch.setattr(health, "ping_workers", FakePings())
    asked = []
    monkeypatch.setitem(health.DETAILS, "probe", lambda: asked.append(1) or {"n": 1})
    assert client.get("/healthz").json() == {"status": "ok"} and asked == []
    client.force_login(admin_user)
    assert client.get("/healthz").json()["probe"] == {"n": 1} and asked == [1]


# ------------------------------------------------------------------------------------------------- e-mail


def test_printed_invitations_show_no_panel_link(coordinator, settings, capsys, django_capture_on_commit_callbacks):
    settings.EMAIL_BACKEND = "config.mail.ConsoleBackend"
    study = make_study(coordinator, n_panel=2, invitation="请回答本轮问卷。" + " long line" * 120)
    with django_capture_on_commit_callbacks(execute=True):
        delphi.open_round(study.rounds.get(), coordinator)
    printed = capsys.readouterr().out
    assert printed.count("/delphi/p/[token]/") == 2
    for panelist in study.panelists.all():
        assert delphi.make_token(panelist).split(":")[0] not in printed
        assert delphi.make_token(panelist) not in printed.replace("=\n", "")
    assert "Subject:" in printed


def test_the_console_backend_redacts_html_alternatives_and_subjects(settings):
    from io import StringIO

    stream = StringIO()
    link = "https://minicex.example.org/delphi/p/eyJwIjoxfQ:1u2v3w:SIGNATURE/"
    message = mail.EmailMultiAlternatives(f"Link {link}", f"Open {link}", "from@example.org", ["to@example.org"])
    message.attach_alternative(f'<a href="{link}">open</a>', "text/html")
    ConsoleBackend(stream=stream).send_messages([message])
    assert "SIGNATURE" not in stream.getvalue() and "eyJwIjoxfQ" not in stream.getvalue()
    assert stream.getvalue().count("/delphi/p/[token]/") == 3
    assert "SIGNATURE" in message.body  # the message itself is not changed


def startup(tmp_path, **env) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items()
             if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY", "DEBUG", "CACHE_URL", "EMAIL_BACKEND"}}
    clean.update(MINICEX_VAR_DIR=str(tmp_path), **env)
    return subprocess.run([sys.executable, "-m", "config.run", "worker"], cwd=BASE_DIR, env=clean,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.integration
def test_production_mode_refuses_to_start_without_an_email_backend(tmp_path):
    refused = startup(tmp_path, DEBUG="0", SECRET_KEY="k")
    lines = [line for line in refused.stderr.splitlines() if line.strip()]
    assert refused.returncode == 2 and len(lines) == 1 and "Traceback" not in refused.stderr
    assert lines[0].startswith("error: EMAIL_BACKEND is not set") and "panel links" in lines[0]
    # Chosen explicitly (even the console), the start goes on to the next check.
    chosen = startup(tmp_path, DEBUG="0", SECRET_KEY="k", EMAIL_BACKEND="console")
    assert chosen.returncode == 2 and "EMAIL_BACKEND" not in chosen.stderr and "migrate" in chosen.stderr


@pytest.mark.integration
def test_every_console_backend_setting_means_the_redacting_one(tmp_path):
    code = "import django; django.setup(); from django.conf import settings; print(settings.EMAIL_BACKEND)"
    for value, expected in (("", "config.mail.ConsoleBackend"), ("console", "config.mail.ConsoleBackend"),
                            ("django.core.mail.backends.console.EmailBackend", "config.mail.ConsoleBackend"),
                            ("django.core.mail.backends.smtp.EmailBackend",
                             "django.core.mail.backends.smtp.EmailBackend")):
        done = subprocess.run([sys.executable, "-c", code], cwd=BASE_DIR, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "EMAIL_BACKEND": value, "MINICEX_VAR_DIR": str(tmp_path),
                                   "DJANGO_SETTINGS_MODULE": "config.settings"})
        assert done.stdout.strip() == expected, (value, done.stderr)
