"""tests/demo_world.py: the demo copied back equals the demo loaded for real, and a test's own rows are kept."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from tests import demo_world


def _tables() -> list[str]:
    return connection.introspection.django_table_names(only_existing=True, include_views=False)


@pytest.fixture
def loads(monkeypatch):
    """This process's copies forgotten; the real loads counted."""
    real = demo_world.call_command
    calls = []
    monkeypatch.setattr(demo_world, "_COPIES", {})
    monkeypatch.setattr(demo_world, "call_command", lambda *a, **k: (calls.append(a), real(*a, **k)))
    return calls


@pytest.mark.django_db
def test_a_copied_demo_equals_a_loaded_one_row_for_row_and_id_for_id(loads, demo_scope, make_user):
    from annotation.models import Label
    from projects import scoping
    from projects.services import demo_project
    from scoring.jobs.models import Job

    with transaction.atomic():
        demo_world.load_full_demo()  # for real: this process has no copy yet
        loaded = demo_world._read(_tables())
        assert scoping.active_project_ids() == (demo_project().pk,)
        assert Label.objects.count() > 1000 and Job.objects.filter(status="succeeded").count() > 10
        transaction.set_rollback(True)
    assert not Label.objects.exists() and len(loads) == 1

    with transaction.atomic():
        demo_world.load_full_demo()  # the same state as before the load: copied back
        assert len(loads) == 1
        assert demo_world._read(_tables()) == loaded
        assert scoping.active_project_ids() == (demo_project().pk,)
        transaction.set_rollback(True)

    tables = _tables()
    before = demo_world._fingerprint(tables)
    make_user("someone", "coordinator")  # a state of its own: it would be loaded for real, the account kept
    assert demo_world._fingerprint(tables) != before
