"""The tests' live server (tests/live_server.py): its request threads hand their database connections on, in the
production mode, and none outlives the test."""

from __future__ import annotations

import threading
import time
import urllib.request

import pytest
from django.conf import settings
from django.db.backends.base.base import BaseDatabaseWrapper
from rest_framework.authtoken.models import Token

from tests.conftest import wait_until

POSTGRES = settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"


def get_campaigns(live_server, token: str) -> None:
    """One API request on a client connection of its own (urllib closes it after the answer), so one thread."""
    request = urllib.request.Request(f"{live_server.url}/api/campaigns/", headers={"Authorization": f"Token {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200


def test_request_threads_reuse_one_database_connection(live_server, make_user, monkeypatch):
    token = Token.objects.create(user=make_user("coordinator_live", "coordinator")).key
    opened = []
    connect = BaseDatabaseWrapper.connect

    def counting_connect(self):
        opened.append(self.alias)
        return connect(self)

    httpd = live_server.thread.httpd
    httpd.close_idle_connections()  # none of an earlier test's threads (a browser's keep-alive) hands one on now
    monkeypatch.setattr(BaseDatabaseWrapper, "connect", counting_connect)
    for _ in range(6):
        get_campaigns(live_server, token)
        if POSTGRES:  # the thread hands its connection on just after the client has the answer
            wait_until(lambda: httpd.idle_connections() == 1, 10, "the request thread kept its connection")
    # PostgreSQL keeps connections (CONN_MAX_AGE): the first request's is reused by the five threads after it; SQLite
    # closes its connection when each request ends (CONN_MAX_AGE 0), so each request opens one
    assert len(opened) == (1 if POSTGRES else 6), opened
    assert httpd.close_idle_connections() == (1 if POSTGRES else 0)
    assert httpd.close_idle_connections() == 0


@pytest.mark.skipif(not POSTGRES, reason="embedded mode: SQLite keeps no connection between requests")
def test_no_connection_of_the_server_is_left_when_the_test_ends(live_server, make_user):
    from django.db import connection

    httpd = live_server.thread.httpd
    httpd.close_idle_connections()
    token = Token.objects.create(user=make_user("coordinator_live", "coordinator")).key
    get_campaigns(live_server, token)
    wait_until(lambda: httpd.idle_connections() == 1, 10, "the request thread kept its connection")
    [server_pid] = httpd.idle_backend_pids()

    def server_connected() -> bool:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [server_pid])
            return cursor.fetchone()[0] == 1

    assert server_connected()
    httpd.close_idle_connections()
    wait_until(lambda: not server_connected(), 10, "the server's connection outlived the test")


def test_the_end_of_a_test_waits_for_the_request_being_handled(live_server):
    """A page closed at a test's end may have sent a request (an htmx poll) that still writes to the database; the
    flush after the test waits for it, or it would miss that request's rows."""
    httpd = live_server.thread.httpd
    release = threading.Event()
    counted_application = httpd.get_app()
    started = threading.Event()

    def slow(environ, start_response):
        started.set()
        release.wait(10)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"done"]

    httpd.set_app(slow)  # counted as the application is
    try:
        client = threading.Thread(target=lambda: urllib.request.urlopen(live_server.url + "/", timeout=30).read())
        client.start()
        assert started.wait(10)
        assert not httpd.wait_for_requests(timeout=0.3)
        threading.Timer(0.3, release.set).start()
        began = time.monotonic()
        assert httpd.wait_for_requests(timeout=10)
        assert time.monotonic() - began >= 0.2
        client.join(10)
    finally:
        release.set()
        httpd.application = counted_application
