"""The full demo (``manage.py load_demo --no-logins``) for tests that build on it rather than test it.

Loading it for real takes half a minute (it computes every demo report), and a dozen test modules need it. The first
call in a test process on a given database state loads it for real and keeps a copy of every table afterwards; a
later call on an equal state (the same rows, ids and dates aside) empties the tables and copies them back, which
gives what a load gives, with the copy's ids, in a fraction of a second. The test processes of one run share their
copies through files (a folder conftest makes for the run, :data:`SHARED`): a process whose state another has
loaded copies it instead of loading it again, and one that asks while another is loading waits for that load.
``tests/test_demo.py`` tests the loader itself and keeps loading it for real; ``tests/test_demo_world.py`` checks that
a copy equals a load.

Call it before the test changes anything else: what the copy brings replaces every row (rows the test made are
part of the state compared, so a test with rows of its own gets a real load). The ids of rows that were there before
may change: the active project scope follows its projects by name. Works inside a test's transaction (``db``) and
on a committed database (``transactional_db``, ``live_server``, a module's shared world).
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import hashlib
import io
import os
import pickle
from pathlib import Path

from django.core.management import call_command
from django.core.management.color import no_style
from django.db import connection, transaction

# per test process, database and state before the load: every table's rows after a real load
_COPIES: dict[tuple[str, str, str], dict] = {}
#: The environment variable naming the folder where the run's test processes share their copies.
SHARED = "MINICEX_TEST_DEMO_COPIES"


def load_full_demo() -> None:
    """The database afterwards holds what ``load_demo --no-logins`` makes on it. The active project scope is moved
    to the same projects (by name), whose ids may have changed."""
    from projects import scoping
    from projects.models import Project
    from projects.services import demo_project

    active = scoping.active_project_ids()
    with scoping.scopes_disabled():
        names = list(Project.objects.filter(pk__in=active or ()).values_list("name", flat=True))
        with transaction.atomic():
            demo_project()  # the load makes it first; made here, a test with ``demo_scope`` shares its state
            tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
            key = (connection.vendor, str(connection.settings_dict["NAME"]), _fingerprint(tables))
            rows = _COPIES.get(key)
            if rows is None:
                rows = _COPIES[key] = _load_or_share(key, tables)
            else:
                _reset(tables)
                _write(rows)
        _forget_cached_ids()
        projects = list(Project.objects.filter(name__in=names))
    if active is not None:  # after scopes_disabled, which restores the scope it found on leaving
        scoping.activate(projects)


def _load_or_share(key: tuple[str, str, str], tables: list[str]) -> dict:
    """Load the demo for real and share the rows with the run's other test processes, or copy the rows one of them
    shared for the same state (the database's name aside: each process has its own)."""
    folder = os.environ.get(SHARED)
    if not folder:
        call_command("load_demo", no_logins=True, stdout=io.StringIO())
        return _read(tables)
    path = Path(folder) / f"{hashlib.sha256(repr((key[0], key[2])).encode()).hexdigest()[:32]}.pickle"
    with _locked(path.with_suffix(".lock")):
        if path.exists():
            rows = pickle.loads(path.read_bytes())
            _reset(tables)
            _write(rows)
            return rows
        call_command("load_demo", no_logins=True, stdout=io.StringIO())
        rows = _read(tables)
        written = path.with_suffix(f".{os.getpid()}")
        written.write_bytes(pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL))
        written.rename(path)
        return rows


@contextlib.contextmanager
def _locked(path: Path):
    """An exclusive lock on ``path`` among the run's processes (released when the process dies)."""
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _fingerprint(tables: list[str]) -> str:
    """The database's rows as a load would see them: every table's rows, without their ids, the ids they point to
    and their dates (which differ between two databases migrated alike)."""
    summary = []
    with connection.cursor() as cursor:
        for table in sorted(tables):
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            columns = [column[0] for column in cursor.description]
            keep = [n for n, name in enumerate(columns) if name != "id" and not name.endswith("_id")]
            rows = sorted(repr(tuple(value for n, value in enumerate(row) if n in keep
                                     and not isinstance(value, datetime.date))) for row in cursor.fetchall())
            summary.append((table, len(rows), hashlib.sha256("\n".join(rows).encode()).hexdigest()))
    return hashlib.sha256(repr(summary).encode()).hexdigest()  # the same in every process, unlike hash()


def _reset(tables: list[str]) -> None:
    """Every table emptied and its ids restarted from 1 (in the surrounding transaction on both databases)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":  # checks of foreign keys still pending would block TRUNCATE
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        for sql in connection.ops.sql_flush(no_style(), tables, reset_sequences=True, allow_cascade=True):
            cursor.execute(sql)


def _read(tables: list[str]) -> dict:
    raw = connection.connection.cursor()
    rows: dict = {}
    if connection.vendor == "postgresql":
        for table in tables:
            with raw.copy(f"COPY {connection.ops.quote_name(table)} TO STDOUT") as copy:
                rows[table] = b"".join(bytes(block) for block in copy)
        return rows
    for table in [*tables, "sqlite_sequence"]:
        raw.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
        rows[table] = ([column[0] for column in raw.description], sorted(raw.fetchall(), key=repr))
    return rows


def _write(rows: dict) -> None:
    raw = connection.connection.cursor()
    quote = connection.ops.quote_name
    if connection.vendor == "postgresql":
        for table, data in rows.items():
            if data:
                with raw.copy(f"COPY {quote(table)} FROM STDIN") as copy:
                    copy.write(data)
        with connection.cursor() as cursor:
            for table in rows:
                for sequence in connection.introspection.get_sequences(cursor, table):
                    column = quote(sequence["column"])
                    cursor.execute(f"SELECT setval(%s, COALESCE(MAX({column}), 1), MAX({column}) IS NOT NULL) "
                                   f"FROM {quote(table)}", [sequence["name"]])
        return
    for table, (columns, values) in rows.items():
        if table == "sqlite_sequence":  # last (its rows are made by the inserts above): the copy's own values
            raw.executemany("DELETE FROM sqlite_sequence WHERE name = ?", [(name,) for name, _ in values])
        if values:
            raw.executemany(f"INSERT INTO {quote(table)} ({', '.join(quote(c) for c in columns)}) "
                            f"VALUES ({', '.join('?' * len(columns))})", values)


def _forget_cached_ids() -> None:
    from django.contrib.contenttypes.models import ContentType
    from django.core.cache import cache

    from tests.conftest import forget_cached_ids

    forget_cached_ids()
    ContentType.objects.clear_cache()  # a copy another process shared brings its content types' ids
    cache.clear()
