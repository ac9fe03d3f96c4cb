"""Start-up errors that must reach the user as one clear line, not a traceback."""

import sys

from django.core.exceptions import ImproperlyConfigured


class ConfigError(ImproperlyConfigured):
    """A setting is missing or wrong; the message says what to fix."""


def exit_with(message: str, code: int = 2) -> None:
    """Print one line to stderr and exit."""
    sys.stderr.write(f"error: {message}\n")
    sys.exit(code)
