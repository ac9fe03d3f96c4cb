"""The machine's CPU speed at the time of a benchmark, for reading its figures.

The machines here are virtual and their CPU speed varies over a day (the same plain Python loop has taken twice
as long in the morning as in the evening on one machine). Benchmarks print this line so that a figure can be
compared with one measured at another time.
"""

from __future__ import annotations

import time


def python_loop_seconds(steps: int = 10_000_000, repeats: int = 3) -> float:
    """Best of ``repeats`` runs of a plain Python loop of ``steps`` additions."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        total = 0
        for i in range(steps):
            total += i
        best = min(best, time.perf_counter() - started)
    return best


def calibration_line() -> str:
    return (f"machine speed: a 10-million-step Python loop takes {python_loop_seconds():.2f} s "
            "(lower is faster; compare runs at similar speeds)")


def ensure_postgres_database(url: str, *, fresh: bool = False) -> str:
    """Create the PostgreSQL database named in ``url`` when it is missing (``fresh``: drop it first, so the benchmark
    starts from an empty one); returns what was done."""
    from urllib.parse import urlsplit, urlunsplit

    import psycopg
    from psycopg import sql

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    with psycopg.connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is not None
        if exists and not fresh:
            return f"database {name} exists"
        if exists:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return f"database {name} {'recreated' if exists else 'created'}"


def enter_project(name: str):
    """Work in the project ``name`` (created on first use) for the rest of this process: project data is only read
    and written inside a project's scope. Returns the project."""
    from projects import scoping
    from projects.models import Project
    from projects.services import create_project

    with scoping.scopes_disabled():
        project = Project.objects.filter(name=name).first() or create_project(name)
    scoping.activate(project)
    return project
