"""The brokers' transports: the embedded mode's filesystem transport with messages that appear whole, and the Redis
transport with a worker that survives losing Redis while it holds unacknowledged messages.

Filesystem: kombu's own `_put` creates the message file and then writes into it, so a consumer in another process
can list the folder, take the file while it is still empty and fail with "Expecting value: line 1 column 1" (kombu
issue 1551); the message is removed before it is decoded, so it is also lost. Here each message is written under a
name no consumer reads (a `.part` suffix) and renamed into place once complete: a rename within one folder is atomic,
so a consumer sees either no message or all of it.

Redis: when a worker loses the broker, Celery (5.7) first collects the broken connection. Closing its channels stops
at the first that fails (the remote-control channel cannot delete its fanout queue from a Redis that is gone), so the
channel the tasks came from is left open with its unacknowledged messages (a running job: tasks are acknowledged
late; a debounced job waiting for its countdown), and the transport is detached from the connection
(``transport.client = None``). Celery then closes the connection: closing that channel puts its messages back into
Redis through a client built from the detached transport and fails with ``AttributeError: 'NoneType' object has no
attribute 'hostname'``. That is not a connection error, so it escapes kombu's clean-up; the worker logs
"Unrecoverable error" and exits, and nothing resumes when Redis comes back. Here the restore raises the connection
error it is, kombu's clean-up absorbs it and the worker reconnects; a late acknowledgement on the detached channel is
dropped the same way. Nothing is lost: the messages were in a Redis that is gone (or still are, in its unacked set,
given back after the visibility timeout), and the database is the source of truth for pending work
(core/site/reconcile.py sends queued jobs again; core.jobs.services.execute runs a job once).
"""
from __future__ import annotations

import contextlib
import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import TRANSPORT_ALIASES, filesystem, virtual
from kombu.transport import redis as kombu_redis
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

PARTIAL_SUFFIX = ".part"
#: The embedded mode's broker URL scheme (settings.CELERY_BROKER_URL); any other URL keeps its own transport.
SCHEME = "minicexfs"


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        """Put `payload` onto `queue`, visible to consumers only once it is complete."""
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = final + PARTIAL_SUFFIX
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.remove(partial)
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    """The filesystem transport, whose wait for messages ends as soon as the worker is asked to stop.

    A worker on a transport without an event loop (this one) waits for messages in kombu's ``drain_events`` for up to
    2 s at a time and only then looks whether a signal asked it to stop: a warm shutdown (Ctrl-C, a restart) took
    2-5 s. Here the wait is cut into polling intervals and ends with the first one after the request."""

    Channel = Channel

    def drain_events(self, connection, timeout=None):
        deadline = None if timeout is None else monotonic() + timeout
        while True:
            step = self.polling_interval or 0.1
            if deadline is not None:
                step = min(step, max(deadline - monotonic(), 0.0))
            try:
                return super().drain_events(connection, timeout=step)
            except TimeoutError:
                if _worker_stopping() or (deadline is not None and monotonic() >= deadline):
                    raise


def _worker_stopping() -> bool:
    """Whether a signal asked this process's Celery worker to stop (celery.worker.state, set by its handlers)."""
    from celery.worker import state

    # as celery.worker.state.maybe_shutdown reads them: the flag holds the exit code, 0 (EX_OK) for a warm shutdown
    return any(flag is not None and flag is not False for flag in (state.should_stop, state.should_terminate))


TRANSPORT_ALIASES.setdefault(SCHEME, f"{__name__}:Transport")


class RedisQoS(kombu_redis.QoS):
    """Unacknowledged messages of a channel whose transport may have been detached from its connection."""

    def _detached(self) -> bool:
        return self.channel.connection is None or self.channel.connection.client is None

    def _lost(self) -> Exception:
        return kombu_redis.redis.exceptions.ConnectionError("the connection to Redis was lost")

    def restore_unacked(self, client=None):
        """Put the unacknowledged messages back, or raise a connection error when the broker was lost (see the
        module docstring)."""
        if client is None and self._detached():
            self._delivered.clear()
            raise self._lost()
        return super().restore_unacked(client)

    def ack(self, delivery_tag):
        """A late acknowledgement (a job finished) after the broker was lost: the message is forgotten here; Redis
        restarted without it, or gives it back after the visibility timeout and the job, finished, is not run again
        (core.jobs.services.execute)."""
        if self._detached():
            virtual.QoS.ack(self, delivery_tag)
            return
        super().ack(delivery_tag)

    def reject(self, delivery_tag, requeue=False):
        if self._detached():
            virtual.QoS.ack(self, delivery_tag)
            return
        super().reject(delivery_tag, requeue=requeue)


class RedisChannel(kombu_redis.Channel):
    QoS = RedisQoS


class RedisTransport(kombu_redis.Transport):
    Channel = RedisChannel


for _scheme in ("redis", "rediss"):
    TRANSPORT_ALIASES[_scheme] = f"{__name__}:RedisTransport"
