"""The embedded mode's filesystem broker never hands a consumer a message that is still being written.

kombu's stock transport creates the file and then writes into it; a consumer that lists the folder in between takes
an empty file, fails with a JSON decode error and the message is lost (once in CI: a worker's ping reply). Both
tests check the moment that matters: while the payload is being written, a consumer in the same folder sees no
message, and once the put returns it sees the whole message exactly once. They fail on kombu's own transport."""

from __future__ import annotations

import multiprocessing
import os
import time
from queue import Empty

import pytest
from kombu import Connection

from config import broker


def connection(folder) -> Connection:
    for sub in ("queue", "processed", "control"):
        (folder / sub).mkdir(exist_ok=True)
    return Connection(transport=broker.Transport, transport_options={
        "data_folder_in": str(folder / "queue"), "data_folder_out": str(folder / "queue"),
        "processed_folder": str(folder / "processed"), "store_processed": False,
        "control_folder": str(folder / "control")})


def test_the_embedded_mode_uses_the_atomic_transport():
    from config.celery import app

    if os.environ.get("CELERY_BROKER_URL"):
        pytest.skip("production mode: the broker is Redis")
    with app.connection_for_write() as conn:
        assert isinstance(conn.transport, broker.Transport)
    # Another URL keeps its own transport (the health check's test points the app at a dead Redis this way).
    with app.connection_for_write("redis://127.0.0.1:1/0") as conn:
        assert conn.transport_cls == "redis"


def test_a_message_being_written_is_invisible_to_a_consumer(tmp_path, monkeypatch):
    seen_during_write = []
    conn = connection(tmp_path)
    channel = conn.default_channel
    real_str_to_bytes = broker.str_to_bytes

    def write_while_a_consumer_looks(text):
        # The file is open for writing at this point; a consumer now must find nothing to take.
        try:
            seen_during_write.append(channel._get("q"))
        except Empty:
            seen_during_write.append(None)
        return real_str_to_bytes(text)

    monkeypatch.setattr(broker, "str_to_bytes", write_while_a_consumer_looks)
    channel._put("q", {"body": "x" * 10_000})
    monkeypatch.setattr(broker, "str_to_bytes", real_str_to_bytes)

    assert seen_during_write == [None]
    assert channel._get("q") == {"body": "x" * 10_000}
    with pytest.raises(Empty):
        channel._get("q")
    assert os.listdir(tmp_path / "queue") == []
    conn.release()


def _produce(folder: str, count: int) -> None:
    from pathlib import Path

    with connection(Path(folder)) as conn:
        channel = conn.default_channel
        for i in range(count):
            channel._put("q", {"i": i, "pad": "y" * 50_000})


def test_a_consumer_racing_a_producer_in_another_process_gets_every_message_whole(tmp_path):
    count = 300
    producer = multiprocessing.get_context("spawn").Process(target=_produce, args=(str(tmp_path), count))
    conn = connection(tmp_path)
    channel = conn.default_channel
    received = []
    producer.start()
    deadline = time.monotonic() + 120
    try:
        while len(received) < count and time.monotonic() < deadline:
            try:
                received.append(channel._get("q")["i"])
            except Empty:
                continue
    finally:
        producer.join(timeout=60)
        conn.release()
    assert producer.exitcode == 0
    assert sorted(received) == list(range(count))


def test_a_worker_asked_to_stop_stops_waiting_for_messages(tmp_path, monkeypatch):
    """A worker on this transport waits for messages in ``drain_events``; Celery looks at its stop flag only when that
    returns (after up to 2 s), so a warm shutdown took 2-5 s. Asked to stop, the wait ends with the next polling
    interval, even a wait without a timeout, which on kombu's transport would never return without a message."""
    import threading

    from celery.worker import state
    from kombu import Queue

    with connection(tmp_path) as conn, conn.Consumer(Queue("idle"), callbacks=[lambda body, message: None]):
        outcome: list = []

        def wait() -> None:
            try:
                conn.drain_events(timeout=None)
                outcome.append("message")
            except TimeoutError:
                outcome.append("timeout")

        waiting = threading.Thread(target=wait, daemon=True)
        waiting.start()
        waiting.join(0.5)
        assert waiting.is_alive(), "nothing was sent and nobody asked to stop: the wait goes on"
        monkeypatch.setattr(state, "should_stop", 0)  # what the warm shutdown's signal handler sets (EX_OK)
        waiting.join(10)
        assert not waiting.is_alive() and outcome == ["timeout"]


def test_the_workers_timer_stops_without_waiting_out_its_idle_wait():
    """Celery's timer thread waits on a condition while it has nothing scheduled and its stop() only sets a flag;
    config.celery.PromptTimer also wakes the wait. The wait here ignores its timeout, so a stop that does not wake it
    never returns."""
    import threading

    from config.celery import PromptTimer

    class Endless(threading.Condition):
        def wait(self, timeout=None):
            return super().wait(None)

    timer = PromptTimer()
    timer.not_empty = Endless(timer.mutex)
    timer.ensure_started()
    time.sleep(0.2)  # the thread is in its idle wait
    stopping = threading.Thread(target=timer.stop, daemon=True)
    stopping.start()
    stopping.join(10)
    assert not stopping.is_alive() and not timer.is_alive()
