"""``make run``'s launcher (config/run.py) with stand-in children: the banner with the demo logins as soon as the
login page answers, before the workers start; every line, the children's too, whole through one writer; the fake
endpoint's port follows the app's."""

from __future__ import annotations

import signal
import socket
import sys
import time

import pytest

from config import run

WEB = """
import http.server, sys, time
sys.stdout.write("web: starting ")
sys.stdout.flush()
time.sleep(0.2)
sys.stdout.write("x" * 300 + "\\n")  # one line written in two pieces
sys.stdout.flush()
time.sleep(0.8)  # the login page answers only after a while
class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"login")
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Page).serve_forever()
"""


class Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def write(self, text: str) -> None:
        self.lines.extend(text.rstrip("\n").split("\n"))

    def flush(self) -> None:
        pass

    def index(self, fragment: str) -> int:
        """The first line holding ``fragment`` (a phase line: starting with it)."""
        return next(i for i, line in enumerate(self.lines)
                    if (line.startswith(fragment) if fragment.startswith("==>") else fragment in line))


@pytest.fixture
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_banner_comes_with_the_login_page_and_before_the_workers(monkeypatch, free_port):
    import annotation.demo

    out = Lines()
    monkeypatch.setattr(run, "console", run.Console(stream=out))
    monkeypatch.setattr(run, "web_command", lambda host, port, checked: [sys.executable, "-c", WEB, str(port)])
    workers = iter(["print('default worker ready'); import time; time.sleep(1)",
                    "print('llm worker ready'); import time; time.sleep(30)"])
    monkeypatch.setattr(run, "worker_command", lambda *args, **kwargs: [sys.executable, "-c", next(workers)])
    started = time.monotonic()
    # the demo accounts exist half a second into the load; the load itself takes 3 s
    monkeypatch.setattr(annotation.demo, "demo_logins", lambda: [("physician", "physician", "physician-demo")]
                        if time.monotonic() - started > 0.5 else [])
    monkeypatch.setattr(run, "load_demo", lambda: run.phase("demo data", lambda: time.sleep(3)))
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        code = run.run_dev("127.0.0.1", free_port, None, demo=True)
    finally:
        signal.signal(signal.SIGINT, handlers[0])
        signal.signal(signal.SIGTERM, handlers[1])
    text = "\n".join(out.lines)
    assert code == 0, text
    assert "web: starting " + "x" * 300 in out.lines, text  # a child's line whole, though written in pieces
    order = ["==> web server", "==> web server: ", "Mini-CEX Workbench is up at", "physician / physician-demo",
             "The demo data is still loading", "Press Ctrl-C to stop the web server and the workers.",
             "Starting the workers.",
             "worker ready", "==> demo data: ", "Stopped the web server and the workers."]
    positions = [out.index(fragment) for fragment in order]
    assert positions == sorted(positions), text
    assert text.count("Mini-CEX Workbench is up at") == 1  # the demo brought no logins the banner lacked


def test_the_fake_endpoint_listens_on_the_apps_port_plus_one(monkeypatch):
    monkeypatch.delenv("FAKE_LLM_PORT", raising=False)
    monkeypatch.setenv("PORT", "8107")
    assert run.fake_llm_port() == 8108
    monkeypatch.setenv("FAKE_LLM_PORT", "9001")
    assert run.fake_llm_port() == 9001
    monkeypatch.delenv("FAKE_LLM_PORT")
    monkeypatch.delenv("PORT")
    assert run.fake_llm_port() == 8001


def test_the_launcher_hands_its_port_to_the_fake_endpoint(monkeypatch):
    """``python -m config.run --port N`` sets PORT for the demo's fake endpoint and every child process."""
    monkeypatch.delenv("FAKE_LLM_PORT", raising=False)
    monkeypatch.setenv("PORT", "8000")
    seen = {}

    def fake_run_dev(host, port, concurrency, demo=False, fake_llm=None, checked=False):
        seen.update(port=port, fake_llm=fake_llm)
        return 0

    monkeypatch.setattr(run, "preflight", lambda migrate=False: None)
    monkeypatch.setattr(run, "write_bytecode", lambda: None)
    monkeypatch.setattr(run, "catch_interrupts", lambda: None)
    monkeypatch.setattr(run, "run_dev", fake_run_dev)
    assert run.main(["dev", "--demo", "--port", "8107"]) == 0
    assert seen == {"port": 8107, "fake_llm": 8108}


def test_the_embedded_broker_names_its_host(caplog, settings):
    """kombu warns "No hostname was supplied" for a broker URL without a host (the filesystem transport has none
    to connect to): the embedded mode's URL names one."""
    import logging

    from kombu import Connection

    import config.broker  # noqa: F401 - registers the embedded scheme

    with caplog.at_level(logging.WARNING, logger="kombu.connection"):
        Connection("minicexfs://localhost//")._info()
        assert not [r for r in caplog.records if "No hostname" in r.getMessage()]
        Connection("minicexfs://")._info()  # what the embedded mode used to say
        assert [r for r in caplog.records if "No hostname" in r.getMessage()]
