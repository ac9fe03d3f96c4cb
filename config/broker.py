"""The embedded mode's broker: kombu's filesystem transport with messages that appear whole.

kombu's own `_put` creates the message file and then writes into it, so a consumer in another process can list the
folder, take the file while it is still empty and fail with "Expecting value: line 1 column 1" (kombu issue 1551);
the message is removed before it is decoded, so it is also lost. Here each message is written under a name no
consumer reads (a `.part` suffix) and renamed into place once complete: a rename within one folder is atomic, so a
consumer sees either no message or all of it.
"""
from __future__ import annotations

import contextlib
import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import TRANSPORT_ALIASES, filesystem
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
    Channel = Channel


TRANSPORT_ALIASES.setdefault(SCHEME, f"{__name__}:Transport")
