"""The squashed migrations (projects.squashing): a fresh database equals one built by the whole
history, schema and seeded rows alike, and a database at any released state upgrades to the same.

Each database is built by the commands a user runs (``manage.py migrate`` in a subprocess) in the suite's mode:
a SQLite file of its own in the embedded mode, a PostgreSQL database of its own on the server of DATABASE_URL.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder

from projects.squashing import REPLACED, SQUASHED

BASE_DIR = Path(__file__).resolve().parent.parent
POSTGRES = settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"

# The four apps' leaf migrations on main at each commit that changed them (git log --first-parent), that is every
# state an instance can be at. One more state existed for a few hours, with scoring's "0005_engine", a name the
# history no longer has (it was renumbered 0006 the same day); an instance there cannot upgrade by any path.
RELEASED = [
    {"annotation": "0002_mini_cex_v1", "scoring": "0001_initial"},
    {"annotation": "0003_campaigns_labels_privacy", "scoring": "0001_initial"},
    {"annotation": "0004_campaign_allow_names", "scoring": "0002_job_message_report_kind"},
    {"annotation": "0004_campaign_allow_names", "scoring": "0003_judges"},
    {"annotation": "0004_campaign_allow_names", "scoring": "0003_judges", "delphi": "0001_initial"},
    {"annotation": "0004_campaign_allow_names", "scoring": "0004_preference_generation", "delphi": "0001_initial"},
    {"annotation": "0004_campaign_allow_names", "scoring": "0006_engine", "delphi": "0001_initial"},
    {"annotation": "0005_instruments", "scoring": "0006_engine", "delphi": "0001_initial"},
    {"annotation": "0005_instruments", "scoring": "0007_endpoint_limits_shared", "delphi": "0001_initial"},
    {"annotation": "0005_instruments", "scoring": "0008_job_state_and_spend", "delphi": "0001_initial"},
    {"annotation": "0006_campaign_random_sample", "scoring": "0008_job_state_and_spend", "delphi": "0001_initial"},
    {"annotation": "0007_score_grid_replicates_judge_keys", "scoring": "0009_imported_judge_runs_score_values",
     "delphi": "0001_initial"},
    {"annotation": "0007_score_grid_replicates_judge_keys", "scoring": "0010_admin_verbose_names",
     "delphi": "0001_initial"},
    {"annotation": "0007_score_grid_replicates_judge_keys", "scoring": "0011_judge_report_job",
     "delphi": "0001_initial"},
    {"annotation": "0009_projects_required", "scoring": "0013_projects_required", "delphi": "0003_projects_required"},
]

# Builds a database by the history alone (the squashed migrations set aside) up to the given leaves, then lets
# `migrate` finish as a user's upgrade would.
HISTORY_TO = """
import json, sys
import django
django.setup()
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader
executor = MigrationExecutor(connection)
executor.loader = MigrationLoader(connection, replace_migrations=False)
executor.migrate([tuple(target) for target in json.loads(sys.argv[1])])
"""


# The project's apps: the four the squash covers, and those made after it (core, where the background job moved).
OWN_APPS = {app for app, _ in REPLACED} | {"core"}


def _applied_up_to(state: dict[str, str]) -> set[tuple[str, str]]:
    """The history's migrations an instance at ``state`` has applied (each app's are numbered in order)."""
    return {(app, name) for app, name in REPLACED if app in state and name <= state[app]}


@contextmanager
def _database():
    """An empty database of its own, in the suite's mode; yields the environment that points a process at it."""
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "MINICEX_VAR_DIR")}
    env.setdefault("SECRET_KEY", "squash-test")
    if not POSTGRES:
        import tempfile

        with tempfile.TemporaryDirectory() as var:
            yield {**env, "MINICEX_VAR_DIR": var}
        return
    import psycopg

    db = settings.DATABASES["default"]
    name = f"minicex_squash_{uuid.uuid4().hex[:10]}"
    params = {"host": db["HOST"] or "127.0.0.1", "port": db["PORT"] or 5432, "user": db["USER"],
              "password": db["PASSWORD"] or None, "dbname": "postgres", "autocommit": True}
    with psycopg.connect(**params) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        password = f":{db['PASSWORD']}" if db["PASSWORD"] else ""
        yield {**env, "DATABASE_URL": f"postgres://{db['USER']}{password}@{params['host']}:{params['port']}/{name}"}
    finally:
        with psycopg.connect(**params) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _run(env: dict, *args: str) -> str:
    result = subprocess.run([sys.executable, *args], cwd=BASE_DIR, env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def _migrate(env: dict) -> str:
    return _run(env, "manage.py", "migrate", "--no-input")


def _dump(env: dict) -> dict:
    """Schema, seeded rows and the recorded migrations (a set of (app, name)), read by one process."""
    dump = json.loads(_run(env, "tests/schema_dump.py"))
    dump["recorded"] = {tuple(key) for key in dump["recorded"]}
    return dump


def _recorded(env: dict) -> set[tuple[str, str]]:
    code = ("import django, json; django.setup(); from django.db import connection; "
            "from django.db.migrations.recorder import MigrationRecorder; "
            "print(json.dumps(sorted(MigrationRecorder(connection).applied_migrations())))")
    return {tuple(key) for key in json.loads(_run(env, "-c", code))}


@pytest.fixture(scope="module")
def squashed_dump():
    """A fresh database as `make run` creates it: the squashed migrations, nothing of the history."""
    with _database() as env:
        output = _migrate(env)
        dump = _dump(env)
        return output, dump["recorded"], dump


@pytest.mark.integration  # runs migrate in processes of its own, on databases of its own
def test_a_fresh_database_runs_only_the_squashed_migrations(squashed_dump):
    output, recorded, dump = squashed_dump
    for app, name in SQUASHED:
        assert f"Applying {app}.{name}... OK" in output
    assert "annotation.0001_initial" not in output and "scoring.0018" not in output
    assert set(SQUASHED) | set(REPLACED) <= recorded  # later upgrades see the history as applied
    assert dump["rows"]["annotation_scale"][0]["slug"] == "llm-mini-cex"
    assert [row["name"] for row in dump["rows"]["annotation_project"]] == ["Default"]


@pytest.mark.integration  # runs migrate in processes of its own, on databases of its own
@pytest.mark.parametrize("state", [RELEASED[0], RELEASED[-1]], ids=["first-release", "last-release"])
def test_the_history_from_any_release_gives_the_same_database_as_the_squash(squashed_dump, state):
    """An instance at a release upgraded by `migrate`: schema and seeded rows equal the fresh squashed database's, and
    the squashed migrations end up recorded as applied. From the first release (two of the history's migrations)
    this is the whole history from nothing, the unsquashed database the issue compares the squash with (the history
    run alone to its end, as a test of its own, took another minute per pass for the same migrations)."""
    with _database() as env:
        targets = sorted(state.items())
        _run(env, "-c", HISTORY_TO, json.dumps(targets))
        output = _migrate(env)
        assert "_squashed..." not in output  # the rest of the history ran, not the squash
        upgraded = _dump(env)
        assert set(SQUASHED) <= upgraded["recorded"]
    fresh = squashed_dump[2]
    assert upgraded["schema"].keys() == fresh["schema"].keys()
    different = [table for table in fresh["schema"] if upgraded["schema"][table] != fresh["schema"][table]]
    assert not different, different
    assert upgraded["rows"] == fresh["rows"]


def _later() -> set[tuple[str, str]]:
    """The project's migrations made after the squash: they follow it (and the history's last migration), so every
    database plans them until it has them."""
    made = MigrationLoader(None, ignore_no_migrations=True).disk_migrations
    return {key for key in made if key[0] in OWN_APPS} - set(REPLACED) - set(SQUASHED)


@pytest.mark.django_db
@pytest.mark.parametrize("state", RELEASED, ids=[f"release-{n}" for n in range(len(RELEASED))])
def test_every_released_state_takes_the_rest_of_the_history(monkeypatch, state):
    """What Django plans for an instance at each release: the history's remaining migrations, never a squashed
    one (which would create tables that exist)."""
    applied = _applied_up_to(state)
    contrib = {key for key in MigrationRecorder(connection).applied_migrations() if key[0] not in OWN_APPS}
    monkeypatch.setattr(MigrationRecorder, "applied_migrations", lambda self: dict.fromkeys(applied | contrib))
    executor = MigrationExecutor(connection)
    executor.loader = MigrationLoader(connection)
    executor.loader.check_consistent_history(connection)
    plan = [migration for migration, backwards in executor.migration_plan(executor.loader.graph.leaf_nodes())]
    planned = {(migration.app_label, migration.name) for migration in plan}
    assert planned == (set(REPLACED) - applied) | _later()


@pytest.mark.django_db
def test_a_fresh_database_plans_the_squash_and_a_migrated_one_nothing(monkeypatch):
    for applied, expected in ((set(), set(SQUASHED) | _later()), (set(REPLACED), _later())):
        contrib = {key for key in MigrationRecorder(connection).applied_migrations() if key[0] not in OWN_APPS}
        monkeypatch.setattr(MigrationRecorder, "applied_migrations",
                            lambda self, applied=applied, contrib=contrib: dict.fromkeys(applied | contrib))
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
        assert {(migration.app_label, migration.name) for migration, _ in plan} == expected


@pytest.mark.integration  # runs migrate in processes of its own, on databases of its own
def test_a_first_migrate_interrupted_between_the_squashed_migrations_says_how_to_start_again():
    """Stopped after projects' squashed migration (as a crash would stop it), the database reads as migrated with
    most tables missing: every later `migrate` says so and what to do, rather than failing on the first page."""
    with _database() as env:
        for command in (["migrate", "projects", SQUASHED[0][1]], ["migrate"]):
            result = subprocess.run([sys.executable, "manage.py", *command, "--no-input"], cwd=BASE_DIR, env=env,
                                    capture_output=True, text=True, timeout=600)
            assert result.returncode == 1, result.stdout + result.stderr
            assert "its first `migrate` was interrupted" in result.stderr and "annotation_" in result.stderr
            assert "Traceback" not in result.stderr


# `migrate` on a fresh database, stopped (as by Ctrl-C) while Django records the history that projects' squashed
# migration replaces: at the given record of it.
MIGRATE_STOPPED_WHILE_RECORDING = """
import sys
import django
django.setup()
from django.core.management import call_command
from django.db.migrations.recorder import MigrationRecorder
from projects.squashing import REPLACED
real, records = MigrationRecorder.record_applied, []
def record_applied(self, app, name):
    if (app, name) in REPLACED:
        records.append(name)
        if len(records) == int(sys.argv[1]):
            raise KeyboardInterrupt
    real(self, app, name)
MigrationRecorder.record_applied = record_applied
try:
    call_command("migrate", interactive=False, verbosity=0)
except KeyboardInterrupt:
    sys.exit(130)
"""


@pytest.mark.integration  # runs migrate in processes of its own, on databases of its own
def test_a_first_migrate_stopped_while_recording_the_history_leaves_nothing_half_done():
    """A squashed migration's tables and the history it records are one transaction: Django records after the commit,
    one row at a time, when a migration leaves statements deferred, and CI once stopped a first `migrate` there (part
    of the history recorded, the tables of the rest missing: every later `migrate` failed with a traceback). Stopped
    at the 10th record, nothing is kept and the next `migrate` builds the database."""
    with _database() as env:
        result = subprocess.run([sys.executable, "-c", MIGRATE_STOPPED_WHILE_RECORDING, "10"], cwd=BASE_DIR, env=env,
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 130, result.stdout[-3000:] + result.stderr[-3000:]
        assert not set(REPLACED) & _recorded(env)
        _migrate(env)
        _run(env, "manage.py", "migrate", "--check")
        assert set(SQUASHED) | set(REPLACED) <= _recorded(env)


# sqlmigrate's SQL of every migration of the project's apps, each on the state sqlmigrate builds for it (the graph
# loaded without replacing, so the history and the squash are in it side by side): the state of an app's leaf's plan
# is built once, unrendered (a rendered state renders again at each operation: slower), and each of the app's
# migrations prints its SQL on a copy of the state before it.
# Prints the migrations that failed.
SQL_OF_EVERY_MIGRATION = """
import io, json, sys, traceback
import django
django.setup()
from django.core.management import call_command
from django.db import connection
from django.db.migrations.loader import MigrationLoader
loader = MigrationLoader(connection, replace_migrations=False)
printed, failed = set(), {}
for app in json.loads(sys.argv[1]):
    leaf = max(key for key in loader.graph.leaf_nodes() if key[0] == app)
    plan = loader.graph.forwards_plan(leaf)
    state = loader.project_state(plan[0], at_end=False)
    for key in plan:
        migration = loader.graph.nodes[key]
        if key[0] == app:
            try:
                with connection.schema_editor(collect_sql=True, atomic=migration.atomic) as editor:
                    migration.apply(state.clone(), editor, collect_sql=True)
            except Exception:
                failed[".".join(key)] = traceback.format_exc(limit=-3)
            else:
                printed.add(key)
        state = migration.mutate_state(state, preserve=False)
# and the command itself on one migration made after the squash
out = io.StringIO()
call_command("sqlmigrate", "annotation", "0017", stdout=out, stderr=io.StringIO())
print(json.dumps({"printed": sorted(printed), "failed": failed, "command": len(out.getvalue())}))
"""


@pytest.mark.integration  # runs sqlmigrate in a process of its own, on a database of its own
def test_sqlmigrate_prints_every_migration_on_a_fresh_database():
    with _database() as env:
        result = json.loads(_run(env, "-c", SQL_OF_EVERY_MIGRATION, json.dumps(sorted(OWN_APPS))))
    assert result["failed"] == {}
    every = {(app, path.stem) for app in OWN_APPS for path in (BASE_DIR / app / "migrations").glob("0*.py")}
    assert {tuple(key) for key in result["printed"]} == every
    assert result["command"] > 0
