"""The tests' live server: Django's (as pytest-django's ``live_server`` runs it), except that its request threads
reuse database connections instead of each opening its own.

Django's ThreadedWSGIServer runs every client connection in a new thread and closes that thread's database
connections when it ends, so on PostgreSQL every client connection opened a database connection: every request of an
API test (a browser keeps its connections for several), each a new PostgreSQL server process of about 5 ms, a sixth of
an API fuzz shard's time. Production's gunicorn workers keep theirs (``CONN_MAX_AGE``), and so does this server: a
thread that ends hands its open connections to the next thread, and they are closed when the test ends
(``close_idle_connections``) and when the server stops. SQLite closes its connections at the end of each request
(``CONN_MAX_AGE`` 0 in the embedded mode), so there is nothing to hand on.
"""

from __future__ import annotations

import socket
import threading

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.test.testcases import LiveServerThread, ThreadedWSGIServer
from pytest_django.live_server_helper import LiveServer


class ReusingWSGIServer(ThreadedWSGIServer):
    """ThreadedWSGIServer whose request threads take their database connections from the threads that ended."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._idle: list[dict[str, BaseDatabaseWrapper]] = []
        self._lock = threading.Lock()
        self._closed = False
        # bumped by close_idle_connections: a thread that began before (a browser's keep-alive connection that
        # outlived its test) closes its connections instead of handing them on
        self._generation = 0
        self._thread = threading.local()
        self._requests_running = 0
        self._requests_done = threading.Condition(self._lock)

    def set_app(self, application):
        """Count the requests being handled, so that a test's end can wait for them (``wait_for_requests``)."""

        def counted(environ, start_response):
            with self._lock:
                self._requests_running += 1
            try:
                return application(environ, start_response)
            finally:
                with self._lock:
                    self._requests_running -= 1
                    self._requests_done.notify_all()

        super().set_app(counted)

    def wait_for_requests(self, timeout: float) -> bool:
        """Wait until no request is being handled (at most ``timeout`` seconds): a request a closed page sent just
        before (an htmx poll) still writes to the database, and a flush that ran meanwhile would miss its rows.
        Returns whether none is running."""
        with self._lock:
            return self._requests_done.wait_for(lambda: self._requests_running == 0, timeout)

    def get_request(self):
        """Accept a connection with Nagle's algorithm off: the WSGI handler writes the headers and the body apart,
        and the body then waited for the client's delayed ACK (about 40 ms a request on Linux)."""
        connection, address = super().get_request()
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection, address

    def process_request_thread(self, request, client_address):
        with self._lock:
            handed_on = self._idle.pop() if self._idle else {}
            self._thread.generation = self._generation
        for alias, connection in handed_on.items():
            connections[alias] = connection
        super().process_request_thread(request, client_address)

    def _close_connections(self):
        """Called when a client connection ends, in its thread: keep the thread's open connections that are in
        autocommit, outside a transaction and without errors; close the rest, as Django does."""
        kept = {}
        for connection in connections.all(initialized_only=True):
            if self.connections_override and connection.alias in self.connections_override:
                continue  # an in-memory SQLite database's one connection, shared by every thread
            reusable = (connection.connection is not None and not connection.in_atomic_block
                        and not connection.errors_occurred and connection.get_autocommit())
            if not reusable:
                connection.close()
                continue
            if not connection.allow_thread_sharing:
                connection.inc_thread_sharing()  # used by one thread at a time: the one it is handed to
            kept[connection.alias] = connection
        with self._lock:
            current = getattr(self._thread, "generation", None) == self._generation
            if kept and current and not self._closed:
                self._idle.append(kept)
                return
        for connection in kept.values():
            connection.close()

    def idle_connections(self) -> int:
        """How many connections wait for the next request thread."""
        with self._lock:
            return sum(len(handed_on) for handed_on in self._idle)

    def idle_backend_pids(self) -> list[int]:
        """The database server's process ids of the idle connections (PostgreSQL)."""
        with self._lock:
            return [connection.connection.info.backend_pid for handed_on in self._idle
                    for connection in handed_on.values()]

    def close_idle_connections(self) -> int:
        """Close the connections no request thread holds (and those of the threads running now, when they end);
        returns how many were closed now."""
        with self._lock:
            idle, self._idle = self._idle, []
            self._generation += 1
        for handed_on in idle:
            for connection in handed_on.values():
                connection.close()
        return sum(len(handed_on) for handed_on in idle)

    def server_close(self):
        with self._lock:
            self._closed = True
        self.close_idle_connections()
        super().server_close()


class ReusingLiveServerThread(LiveServerThread):
    server_class = ReusingWSGIServer


def start_live_server(addr: str) -> LiveServer:
    """pytest-django's LiveServer (the object its ``live_server`` fixture yields) on a ReusingWSGIServer."""
    server = LiveServer(addr, start=False)
    thread = server.thread
    server.thread = ReusingLiveServerThread(thread.host, thread.static_handler,
                                            connections_override=thread.connections_override, port=thread.port)
    server.thread.daemon = True
    server.start()
    return server


def close_idle_connections(server: LiveServer) -> None:
    """At the end of a test: no request of the server is still being handled, and no connection of the server
    outlives it (a test may restart or drop the database)."""
    httpd = getattr(server.thread, "httpd", None)
    if isinstance(httpd, ReusingWSGIServer):
        httpd.wait_for_requests(timeout=30)
        httpd.close_idle_connections()
