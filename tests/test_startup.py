"""Bad configuration stops start-up with one clear line, not a traceback."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

BASE_DIR = Path(__file__).resolve().parent.parent


def run(args, tmp_path, **env):
    clean = {k: v for k, v in os.environ.items()
             if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY", "DEBUG", "CACHE_URL"}}
    clean["MINICEX_VAR_DIR"] = str(tmp_path)
    clean.update(env)
    return subprocess.run([sys.executable, *args], cwd=BASE_DIR, env=clean, capture_output=True, text=True,
                          timeout=60)


def assert_one_line_error(result, *fragments):
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.mark.integration
def test_missing_secret_key_in_production(tmp_path):
    result = run(["manage.py", "check"], tmp_path, DATABASE_URL="postgres://postgres@127.0.0.1:5432/x",
                 CELERY_BROKER_URL="redis://127.0.0.1:6379/0")
    assert_one_line_error(result, "SECRET_KEY")


@pytest.mark.integration
def test_malformed_database_url(tmp_path):
    result = run(["-m", "config.run", "worker"], tmp_path, DATABASE_URL="mysqlish://nowhere", SECRET_KEY="k")
    assert_one_line_error(result, "DATABASE_URL")


@pytest.mark.integration
def test_unreachable_database(tmp_path):
    result = run(["-m", "config.run", "web"], tmp_path, SECRET_KEY="k",
                 DATABASE_URL="postgres://postgres@127.0.0.1:1/minicex", CELERY_BROKER_URL="redis://127.0.0.1:6379/0")
    assert_one_line_error(result, "cannot connect to the database", "127.0.0.1:1", "DATABASE_URL")


@pytest.mark.integration
def test_unreachable_broker(tmp_path):
    result = run(["-m", "config.run", "worker"], tmp_path, SECRET_KEY="k",
                 DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3", CELERY_BROKER_URL="redis://127.0.0.1:1/0")
    assert_one_line_error(result, "cannot reach the Celery broker", "CELERY_BROKER_URL")


@pytest.mark.integration
def test_unapplied_migrations_are_reported(tmp_path):
    result = run(["-m", "config.run", "worker"], tmp_path)
    assert_one_line_error(result, "manage.py migrate")


@pytest.mark.integration
def test_bad_boolean(tmp_path):
    result = run(["manage.py", "check"], tmp_path, DEBUG="maybe")
    assert_one_line_error(result, "DEBUG")
