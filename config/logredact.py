"""Keep the personal Delphi panel links (``/delphi/p/<signed token>/...``) and the one-time set-password links of
new accounts (``/accounts/set-password/<user>/<token>/``) and of invitations to a project
(``/accounts/invitation/<token>/``) out of the logs.

Anyone holding such a link answers as that panelist, so the token must not land in an access log, where more
people can read it than should. The e-mailed links stay as they are; what is logged is rewritten:

* gunicorn's access log (``python -m config.run web`` uses ``GunicornLogger``): every field;
* Django's own log records (``django.server`` for ``runserver``, ``django.request`` for 4xx/5xx), through the
  ``RedactTokens`` filter on the console handler.

A reverse proxy in front keeps its own access log: configure it the same way (README, *Security*).
"""

from __future__ import annotations

import logging
import re

PANEL_LINK = re.compile(r"(/delphi/p/)[^/\s?#\"']+|(/accounts/set-password/)[^/\s?#\"']+/[^/\s?#\"']+"
                        r"|(/accounts/invitation/)[^/\s?#\"']+")
MARKERS = ("/delphi/p/", "/accounts/set-password/", "/accounts/invitation/")


def redact(text: str) -> str:
    if not any(marker in text for marker in MARKERS):
        return text
    return PANEL_LINK.sub(lambda m: (m.group(1) or m.group(2) or m.group(3)) + "[token]", text)


class RedactTokens(logging.Filter):
    """Rewrites a record whose message holds a panel link (the message is formatted once, here)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if any(marker in message for marker in MARKERS):
            record.msg, record.args = redact(message), None
        return True


try:
    from gunicorn.glogging import Logger as _GunicornLogger
except ImportError:  # pragma: no cover - gunicorn is a dependency; keep the module importable without it
    _GunicornLogger = object


class GunicornLogger(_GunicornLogger):
    """gunicorn ``--logger-class``: no access log field (request line, path, referer, any request or response
    header such as a redirect's Location) shows a token."""

    def atoms(self, resp, req, environ, request_time):
        atoms = super().atoms(resp, req, environ, request_time)
        return {key: redact(value) if isinstance(value, str) else value for key, value in atoms.items()}
