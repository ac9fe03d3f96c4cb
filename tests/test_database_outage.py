"""A PostgreSQL restart in the middle of label saves, with real processes: our own cluster
(initdb and pg_ctl on a spare port), gunicorn in production mode, simulated raters posting clicks the way the
rating page does (retrying what was not acknowledged). Saves get 503 with Retry-After, never another 5xx; the
server log has no traceback; after recovery every acknowledged save is stored."""

import argparse

import pytest

from bench import faults

pytestmark = pytest.mark.integration


def test_saves_get_503_never_500_and_nothing_acknowledged_is_lost_across_a_database_restart():
    try:
        faults.postgres_bin_dir()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    row = faults.database_restart(argparse.Namespace(raters=5, workers=2, seconds=10, before=3, down=2.5))
    assert row["acknowledged"] > 50, row
    assert row["503"] > 0, row  # the outage was seen...
    assert row["5xx"] == 0 and row["tracebacks"] == 0, row  # ...as 503s only, with one log line each
    assert row["lost"] == 0 and row["stuck"] == 0, row
    assert row["recovery_s"] is not None and row["recovery_s"] < 10, row
