"""``make test`` says what it does from its first seconds: the Makefile announces each step, and
pytest's collection prints its progress (tests/progress.py) instead of nothing."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent


def test_the_makefile_announces_each_step_of_make_test():
    makefile = (BASE_DIR / "Makefile").read_text(encoding="utf-8")
    target = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    steps = re.findall(r'@echo "==> (\d)/3 ([a-z]+)', target)
    assert [name for _, name in steps] == ["lint", "migrations", "pytest"]
    assert "--durations=" in target
    # the processes share the work to the end: one that runs out takes half of another's queue (xdist's default left
    # one process with 200 s of the slow transactional tests while the other idled)
    assert "--dist worksteal" in target


def test_collection_prints_its_progress_and_the_slowest_files():
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_XDIST_WORKER", "PYTEST_PROGRESS")}
    env.setdefault("SECRET_KEY", "test-only-insecure-key")
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                             "tests/test_layering.py"], cwd=BASE_DIR, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "collecting tests (importing the test files)" in result.stderr
    assert re.search(r"collected \d+ tests from 1 files in [\d.]+ s \(slowest to import: tests/test_layering\.py",
                     result.stderr), result.stderr
