"""tests/demo_world.py: the demo copied back equals the demo loaded for real, and a test's own rows are kept; a
copy one test process shared is taken by another."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from tests import demo_world


def _tables() -> list[str]:
    return connection.introspection.django_table_names(only_existing=True, include_views=False)


@pytest.fixture
def loads(monkeypatch):
    """This process's copies set aside for the test; the real loads counted. The copies the test makes are kept for
    the process's later tests (a copy taken here is one real load fewer for them), with those set aside."""
    real = demo_world.call_command
    calls = []
    kept = dict(demo_world._COPIES)
    demo_world._COPIES.clear()
    monkeypatch.delenv(demo_world.SHARED, raising=False)  # nor the copies the run's other processes shared
    monkeypatch.setattr(demo_world, "call_command", lambda *a, **k: (calls.append(a), real(*a, **k)))
    yield calls
    demo_world._COPIES.update(kept)


@pytest.mark.django_db
def test_a_copied_demo_equals_a_loaded_one_row_for_row_and_id_for_id(loads, demo_scope, make_user, tmp_path,
                                                                       monkeypatch):
    """Copied back by the process that loaded it, and by another process of the run, which takes the copy the first
    shared (keyed by a fingerprint that is the same in every process)."""
    from annotation.models import Label
    from core.jobs.models import Job
    from projects import scoping
    from projects.services import demo_project

    monkeypatch.setenv(demo_world.SHARED, str(tmp_path))
    with transaction.atomic():
        demo_world.load_full_demo()  # for real: this process has no copy yet, nor has the run
        loaded = demo_world._read(_tables())
        assert scoping.active_project_ids() == (demo_project().pk,)
        assert Label.objects.count() > 1000 and Job.objects.filter(status="succeeded").count() > 10
        transaction.set_rollback(True)
    assert not Label.objects.exists() and len(loads) == 1
    assert len(list(tmp_path.glob("*.pickle"))) == 1

    with transaction.atomic():
        demo_world.load_full_demo()  # the same state as before the load: copied back
        assert len(loads) == 1
        assert demo_world._read(_tables()) == loaded
        assert scoping.active_project_ids() == (demo_project().pk,)
        transaction.set_rollback(True)

    demo_world._COPIES.clear()  # as another test process, which has no copy of its own
    with transaction.atomic():
        demo_world.load_full_demo()  # the copy the run's first process shared
        assert len(loads) == 1
        assert demo_world._read(_tables()) == loaded
        transaction.set_rollback(True)
    fingerprint = demo_world._fingerprint(_tables())
    assert len(fingerprint) == 64 and int(fingerprint, 16) >= 0  # a digest, not hash(), which differs by process

    tables = _tables()
    before = demo_world._fingerprint(tables)
    make_user("someone", "coordinator")  # a state of its own: it would be loaded for real, the account kept
    assert demo_world._fingerprint(tables) != before


@pytest.mark.django_db
def test_the_rows_made_again_after_a_flush_equal_the_migrations_so_the_demo_copy_applies(db):
    """A transactional test's flush removes the migrations' rows and conftest makes them again; made otherwise (a
    description missing, an audit event more), every later state differs from the one the copy was taken on, and
    each test process loaded the demo for real once more. (Run before the transactional tests, as pytest-django
    orders them, this test starts on the freshly migrated database.)"""
    from django.core.management import call_command

    from tests.conftest import restore_migration_rows

    tables = _tables()
    migrated = {table: demo_world._fingerprint([table]) for table in tables}
    with transaction.atomic():
        call_command("flush", interactive=False, verbosity=0)  # as a transactional test ends
        assert demo_world._fingerprint(["annotation_project"]) != migrated["annotation_project"]
        restore_migration_rows()
        assert {table: demo_world._fingerprint([table]) for table in tables} == migrated
        transaction.set_rollback(True)

