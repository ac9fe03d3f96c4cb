"""Django looks for ``core.admin``: the background jobs' admin page."""

from core.jobs import admin as jobs_admin  # noqa: F401
