"""E-mail that is printed rather than sent never shows a personal Delphi panel link.

With the console backend a message goes to the process's standard output, which ends up in the server log; a panel
link there lets anyone who reads the log answer as that panelist. :class:`ConsoleBackend` (the embedded mode's
default, and what ``EMAIL_BACKEND=console`` or Django's own console backend become, see ``config/settings.py``)
prints every message with its links rewritten to ``/delphi/p/[token]/`` (``config.logredact``), before the message
is encoded, so neither a long line's quoted-printable breaks nor base64 can hide a token from the redaction. The
panelists of a study run on it get no usable link: production needs a real backend (``EMAIL_BACKEND`` and
``EMAIL_HOST``...), and ``python -m config.run`` refuses to start in production mode unless ``EMAIL_BACKEND`` is set.
"""

from __future__ import annotations

import copy

from django.core.mail.backends import console

from config.logredact import redact

CONSOLE = "config.mail.ConsoleBackend"
DJANGO_CONSOLE = "django.core.mail.backends.console.EmailBackend"


def redacted(message):
    """A copy of an ``EmailMessage`` whose subject, body and alternative parts show no panel link."""
    clean = copy.copy(message)
    clean.subject = redact(str(message.subject))
    clean.body = redact(str(message.body))
    alternatives = getattr(message, "alternatives", None)
    if alternatives:
        clean.alternatives = [_redacted_part(part) for part in alternatives]
    return clean


def _redacted_part(part):
    content, *rest = part
    content = redact(content) if isinstance(content, str) else content
    return part._replace(content=content) if hasattr(part, "_replace") else (content, *rest)


class ConsoleBackend(console.EmailBackend):
    """Django's console backend, panel links redacted."""

    def write_message(self, message):
        super().write_message(redacted(message))
